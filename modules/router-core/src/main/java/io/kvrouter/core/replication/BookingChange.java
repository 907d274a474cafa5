package io.kvrouter.core.replication;

import java.util.List;

/**
 * A live booking's mutable fields after a MarkPrefillDone, a Renew, or a Book call bound to it or cancelled
 * ({@code nonces}: the calls it was answered to, oldest first).
 */
public record BookingChange(String requestId, long attempt, boolean prefillDone, long leaseExpiresAtMillis,
    List<Long> nonces) {
  public BookingChange {
    nonces = List.copyOf(nonces);
  }
}
