package io.kvrouter.core.selection;

/**
 * Which leading blocks of a request each rank's active (booked) requests already hold; the rest are the request's
 * additional active blocks in the kv cost. Read concurrently by both selection paths.
 */
public interface ActivePrefixSource {
  /** Fills {@link Candidates#setActiveMatched} for every candidate. */
  void matched(SelectionView view, long[] sequenceHashes, Candidates candidates);

  /** No tracking: no block of a request is considered already active. */
  ActivePrefixSource NONE = (view, hashes, candidates) -> {};
}
