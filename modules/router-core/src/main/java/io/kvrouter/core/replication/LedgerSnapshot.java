package io.kvrouter.core.replication;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;
import java.util.List;

/**
 * An immutable copy of a booking ledger: its live bookings and the highest attempt it issued. A ledger rebuilt from
 * it ({@link BookingLedger#BookingLedger(LedgerSnapshot)}) holds the same bookings and issues attempts above that
 * floor, which is what a new incarnation of the admission actor needs from its predecessor.
 */
public record LedgerSnapshot(List<Entry> bookings, long highestAttempt) {
  public static final LedgerSnapshot EMPTY = new LedgerSnapshot(List.of(), 0);

  public LedgerSnapshot {
    bookings = List.copyOf(bookings);
  }

  /**
   * One live booking. {@code sequenceHashes} must not be modified. {@code nonces}: the Book calls it was answered to,
   * oldest first, and {@code retry} their client's retry number. {@code policyClass}: the admission queue class it
   * was booked in ("" when not known).
   */
  public record Entry(
      String requestId,
      long attempt,
      Rank rank,
      long prefillTokens,
      long decodeBlocks,
      long bookedAtMillis,
      long queuedMicros,
      SelectionResult selection,
      long[] sequenceHashes,
      List<Long> nonces,
      int retry,
      boolean prefillDone,
      long leaseExpiresAtMillis,
      String policyClass) {

    public Entry {
      nonces = List.copyOf(nonces);
      policyClass = policyClass == null ? "" : policyClass;
    }

    /** A booking of no known class. */
    public Entry(String requestId, long attempt, Rank rank, long prefillTokens, long decodeBlocks, long bookedAtMillis,
        long queuedMicros, SelectionResult selection, long[] sequenceHashes, long nonce, boolean prefillDone,
        long leaseExpiresAtMillis) {
      this(requestId, attempt, rank, prefillTokens, decodeBlocks, bookedAtMillis, queuedMicros, selection,
          sequenceHashes, List.of(nonce), 0, prefillDone, leaseExpiresAtMillis, "");
    }

    /** This booking with {@code change}'s mutable fields. */
    public Entry changed(BookingChange change) {
      return new Entry(requestId, attempt, rank, prefillTokens, decodeBlocks, bookedAtMillis, queuedMicros, selection,
          sequenceHashes, change.nonces(), change.retry(), change.prefillDone(), change.leaseExpiresAtMillis(), policyClass);
    }

    /** This booking keeping only {@code hashes} of its sequence hashes. */
    public Entry withSequenceHashes(long[] hashes) {
      return new Entry(requestId, attempt, rank, prefillTokens, decodeBlocks, bookedAtMillis, queuedMicros, selection,
          hashes, nonces, retry, prefillDone, leaseExpiresAtMillis, policyClass);
    }

    /** Prefill tokens the booking still holds on its rank: none once prefill is done. */
    public long heldPrefillTokens() {
      return prefillDone ? 0 : prefillTokens;
    }
  }
}
