package io.kvrouter.core.policy;

/**
 * One selection's candidate ranks as scorers and pickers see them: projected loads and overlaps in, costs out. The
 * selection's per-call scratch implements it, so pickers and scorers need nothing from the selection package.
 */
public interface ScoredCandidates {
  int size();

  int inFlight(int i);

  long prefillTokens(int i);

  long decodeBlocks(int i);

  /** Leading request blocks the rank holds on the device. */
  int deviceOverlap(int i);

  /** Further blocks, beyond the device run, the rank holds on host (or device). */
  int hostOverlap(int i);

  /** Further blocks, beyond the host run, the rank holds on any tier. */
  int diskOverlap(int i);

  /** Leading request blocks the rank's live bookings already hold. */
  int activeMatched(int i);

  double cost(int i);

  void setCost(int i, double cost);

  /** Softmax temperature of this pick; 0 picks the minimum cost. */
  double temperature();

  /** Scratch for a softmax picker's weights; valid for indexes below {@link #size()}. */
  double[] scratchWeights();
}
