package io.kvrouter.core.admission;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;
import java.util.ArrayList;
import java.util.List;

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
  /**
   * The nonces of the Book calls it was answered to, oldest first (the Book that made it, then its replays): a
   * CancelBook frees it only when it takes the last one, so a caller that gave up never frees the booking a retry of
   * the same request id was given, in whatever order the calls reached the actor.
   */
  final List<Long> nonces;
  /** The client's retry number of the calls in {@code nonces}: a call numbered higher supersedes them. */
  int retry;
  boolean prefillDone;
  long leaseExpiresAtMillis;

  Booking(String requestId, long attempt, Rank rank, long prefillTokens, long decodeBlocks, long bookedAtMillis,
      long queuedMicros, SelectionResult selection, List<Long> nonces, int retry, long leaseExpiresAtMillis,
      long[] sequenceHashes, String policyClass) {
    this.requestId = requestId;
    this.attempt = attempt;
    this.rank = rank;
    this.prefillTokens = prefillTokens;
    this.decodeBlocks = decodeBlocks;
    this.bookedAtMillis = bookedAtMillis;
    this.queuedMicros = queuedMicros;
    this.selection = selection;
    this.nonces = new ArrayList<>(nonces);
    this.retry = retry;
    this.leaseExpiresAtMillis = leaseExpiresAtMillis;
    this.sequenceHashes = sequenceHashes;
    this.policyClass = policyClass;
  }

  /** At most this many calls are remembered; the oldest goes first (its late cancel then frees nothing). */
  static final int MAX_NONCES = 8;

  /**
   * Binds a call that was answered this booking (a replay) and was its client's retry number {@code retry}: a higher
   * number than the bound calls' replaces them (the client gave up on them), a lower one binds nothing (a late copy
   * of a call the client already retried). Returns whether anything changed.
   */
  boolean bind(long nonce, int retry) {
    if (retry < this.retry || nonces.contains(nonce)) {
      return false;
    }
    if (retry > this.retry) {
      nonces.clear();
      this.retry = retry;
    }
    if (nonces.size() == MAX_NONCES) {
      nonces.remove(0);
    }
    nonces.add(nonce);
    return true;
  }

  /** Unbinds a call that gave up; returns whether it was bound. */
  boolean unbind(long nonce) {
    return nonces.remove(Long.valueOf(nonce));
  }

  long heldPrefillTokens() {
    return prefillDone ? 0 : prefillTokens;
  }

  /**
   * The decode rank of a prefill/decode pair, or null for a single rank. A pair's {@code rank} is its prefill rank,
   * holding one request and {@code prefillTokens} until the prefill is done (or the pair released); the decode rank
   * holds one request and {@code decodeBlocks} until the pair is released.
   */
  Rank decodeRank() {
    return selection.decode() == null ? null : selection.decode().rank();
  }
}
