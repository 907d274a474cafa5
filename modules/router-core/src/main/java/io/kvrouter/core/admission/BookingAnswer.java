package io.kvrouter.core.admission;

import io.kvrouter.core.selection.SelectionResult;

/** What a Book answers: the selection (with the rank's load after booking) and the booking's fencing token. */
public record BookingAnswer(
    SelectionResult selection,
    String requestId,
    long attempt,
    boolean replay,
    long queuedMicros,
    long leaseExpiresAtMillis) {}
