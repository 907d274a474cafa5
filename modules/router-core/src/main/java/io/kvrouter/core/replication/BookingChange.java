package io.kvrouter.core.replication;

/** A live booking's mutable fields after a MarkPrefillDone or Renew. */
public record BookingChange(String requestId, long attempt, boolean prefillDone, long leaseExpiresAtMillis) {}
