package io.kvrouter.core.selection;

/**
 * Where the kv policy reads cached-prefix overlaps from: the model's KV index (event-fed or approximate). It must be
 * safe to read from many threads while it is being updated.
 */
public interface KvOverlapSource {
  /** Fills {@link Candidates#setOverlap} for every candidate, given the request's sequence hashes. */
  void overlaps(SelectionView view, long[] sequenceHashes, Candidates candidates);

  /** No index: every overlap is zero. */
  KvOverlapSource NONE = (view, hashes, candidates) -> {};
}
