package io.kvrouter.core.admission;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;

/** A live booking in the ledger. Mutable, owned by the admission state (one writer). */
final class Booking {
  final String requestId;
  final long attempt;
  final Rank rank;
  final long prefillTokens;
  final long decodeBlocks;
  final long bookedAtMillis;
  final long queuedMicros;
  final SelectionResult selection;
  /** The request's sequence hashes: the prefixes this booking holds active on its rank. */
  final long[] sequenceHashes;
  /** The admission queue class it was booked in ("" when not known). */
  final String policyClass;
  long nonce;
  boolean prefillDone;
  long leaseExpiresAtMillis;

  Booking(String requestId, long attempt, Rank rank, long prefillTokens, long decodeBlocks, long bookedAtMillis,
      long queuedMicros, SelectionResult selection, long nonce, long leaseExpiresAtMillis, long[] sequenceHashes,
      String policyClass) {
    this.requestId = requestId;
    this.attempt = attempt;
    this.rank = rank;
    this.prefillTokens = prefillTokens;
    this.decodeBlocks = decodeBlocks;
    this.bookedAtMillis = bookedAtMillis;
    this.queuedMicros = queuedMicros;
    this.selection = selection;
    this.nonce = nonce;
    this.leaseExpiresAtMillis = leaseExpiresAtMillis;
    this.sequenceHashes = sequenceHashes;
    this.policyClass = policyClass;
  }

  long heldPrefillTokens() {
    return prefillDone ? 0 : prefillTokens;
  }
}
