package io.kvrouter.core.policy;

/**
 * One selection's candidate ranks as scorers and pickers see them: projected loads and overlaps in, costs out. The
 * selection's per-call scratch implements it, so pickers and scorers need nothing from the selection package.
 */
public interface ScoredCandidates {
  int size();

  int inFlight(int i);

  /**
   * The rank's recent bookings, decayed over the policy's {@code load_bound_window} (0 when the window is off):
   * with its in-flight requests, what the kv cost's load bound counts ({@link #boundLoad}).
   */
  default double recentBookings(int i) {
    return 0;
  }

  /** What the kv cost's load bound counts of candidate i: its in-flight requests and its recent bookings. */
  default double boundLoad(int i) {
    return inFlight(i) + recentBookings(i);
  }

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

  /**
   * Whether these candidates' caller picks one selection at a time, from whichever thread runs it (the admission
   * actor): a lock-free picker then gives it the next unclaimed pick number instead of the calling thread's chunk,
   * so its picks do not depend on which threads it ran on.
   */
  default boolean picksInOrder() {
    return false;
  }

  /**
   * The fewest active prefill tokens of any candidate: the floor from which the kv cost's overlap-credit decay
   * measures a rank's prefill backlog. 0 when there is no candidate.
   */
  default long minPrefillTokens() {
    long min = Long.MAX_VALUE;
    for (int i = 0; i < size(); i++) {
      min = Math.min(min, prefillTokens(i));
    }
    return size() == 0 ? 0 : min;
  }

  /** The deepest device overlap of any candidate. */
  default int deepestDeviceOverlap() {
    int max = 0;
    for (int i = 0; i < size(); i++) {
      max = Math.max(max, deviceOverlap(i));
    }
    return max;
  }

  /** How many candidates have the deepest device overlap. */
  default int deepestDeviceOverlapCount() {
    int deepest = 0;
    int count = 0;
    for (int i = 0; i < size(); i++) {
      int device = deviceOverlap(i);
      if (device > deepest) {
        deepest = device;
        count = 1;
      } else if (device == deepest) {
        count++;
      }
    }
    return count;
  }

  /** The candidates' {@link #boundLoad}s in all: what the kv cost's load bound measures a rank's share against. */
  default double totalBoundLoad() {
    double total = 0;
    for (int i = 0; i < size(); i++) {
      total += boundLoad(i);
    }
    return total;
  }

  /**
   * The longest leading run of request blocks any candidate holds on any tier (device, then host, then disk): the
   * request's depth in the fleet's cache, which the kv cost's shared-cache credit reads as the shared cache.
   */
  default int cachedDepth() {
    int max = 0;
    for (int i = 0; i < size(); i++) {
      max = Math.max(max, deviceOverlap(i) + hostOverlap(i) + diskOverlap(i));
    }
    return max;
  }

  double cost(int i);

  void setCost(int i, double cost);

  /** Softmax temperature of this pick; 0 picks the minimum cost. */
  double temperature();

  /** Scratch for a softmax picker's weights; valid for indexes below {@link #size()}. */
  double[] scratchWeights();
}
