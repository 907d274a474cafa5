package io.kvrouter.core.selection;

import io.kvrouter.core.model.Rank;

/**
 * Where the kv policy reads cached-prefix overlaps from: the model's KV index (event-fed or approximate). It must be
 * safe to read from many threads while it is being updated.
 */
public interface KvOverlapSource {
  /** Fills {@link Candidates#setOverlap} for every candidate, given the request's sequence hashes. */
  void overlaps(SelectionView view, long[] sequenceHashes, Candidates candidates);

  /** A Book routed these sequence hashes to {@code rank}: an approximate index (no KV events) learns from it. */
  default void onBooked(Rank rank, long[] sequenceHashes, long nowMillis) {}

  /** The worker left the model: its blocks go with it. */
  default void removeWorker(String workerId) {}

  /** Drops what is older than its time to live (the approximate index's TTL). */
  default void expire(long nowMillis) {}

  /** No index: every overlap is zero. */
  KvOverlapSource NONE = (view, hashes, candidates) -> {};
}
