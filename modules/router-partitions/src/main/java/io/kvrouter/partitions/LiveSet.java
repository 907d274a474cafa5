package io.kvrouter.partitions;

import java.util.Map;

/**
 * The live bookings one node reported for one region's model (Admin.GetModelState), with when the call was sent and
 * answered, and each booking's worker.
 */
public record LiveSet(String source, int node, String region, double invokeMs, double completeMs,
    Map<BookingKey, String> bookings) {}
