package io.kvrouter.core.replication;

import java.util.List;

/**
 * A live booking's mutable fields after a MarkPrefillDone, a Renew, or a Book call bound to it or cancelled
 * ({@code nonces}: the calls it was answered to, oldest first; {@code retry}: their client's retry number).
 */
public record BookingChange(String requestId, long attempt, boolean prefillDone, long leaseExpiresAtMillis,
    List<Long> nonces, int retry) {
  public BookingChange {
    nonces = List.copyOf(nonces);
  }
}
