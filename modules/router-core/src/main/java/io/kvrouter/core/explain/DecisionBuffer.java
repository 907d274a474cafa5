package io.kvrouter.core.explain;

import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import java.util.Arrays;

/**
 * One decision's copy as recording writes it: arrays reused from one decision to the next (grown to the largest
 * selection seen), so recording allocates nothing once warm. {@link #snapshot} makes the immutable {@link Decision}.
 */
final class DecisionBuffer {
  // per candidate: rank index, in flight, device, host, disk overlap, active matched
  static final int INTS = 6;
  // shared until a slot's first decision: an idle slot costs two small objects
  private static final int[] NO_INTS = new int[0];
  private static final long[] NO_LONGS = new long[0];
  private static final double[] NO_DOUBLES = new double[0];
  private static final byte[] NO_BYTES = new byte[0];

  DecisionKind kind;
  long unixMs;
  long nanos;
  SelectionView view;
  SelectionRequest request;
  /** Why the Book waited in the queue; null when it did not (or for a Select). */
  QueueWait queue;
  int size;
  int chosen;
  int candidatesTotal;
  int[] ints = NO_INTS;
  long[] loads = NO_LONGS;
  double[] costs = NO_DOUBLES;
  double[] recentBookings = NO_DOUBLES;
  /** Over every candidate, not only those kept: what the kv cost's decay and shared credit read. */
  long minPrefillTokens;
  int cachedDepth;
  double totalBoundLoad;
  int deepestDeviceOverlap;
  int deepestDeviceOverlapCount;
  int filteredCount;
  int filteredTotal;
  int[] filteredRanks = NO_INTS;
  byte[] filteredReasons = NO_BYTES;

  /**
   * Copies what {@code c} holds right after {@code Selector.select} returned on {@code view} for {@code request}
   * (same thread, before its next selection). Beyond {@link Decision#MAX_RANKS} candidates, keeps the pick and the
   * cheapest others.
   */
  DecisionBuffer fill(DecisionKind kind, SelectionView view, SelectionRequest request, Candidates c, long unixMs,
      QueueWait queue) {
    this.kind = kind;
    this.queue = queue;
    this.unixMs = unixMs;
    this.nanos = System.nanoTime();
    this.view = view;
    this.request = request;
    int total = c.size();
    int kept = Math.min(total, Decision.MAX_RANKS);
    if (costs.length < kept) {
      ints = new int[kept * INTS];
      loads = new long[kept * 2];
      costs = new double[kept];
      recentBookings = new double[kept];
    }
    int[] order = total <= Decision.MAX_RANKS ? null : cheapestWithPick(c);
    int picked = -1;
    for (int k = 0; k < kept; k++) {
      int i = order == null ? k : order[k];
      int at = k * INTS;
      ints[at] = c.rankIndex(i);
      ints[at + 1] = c.inFlight(i);
      ints[at + 2] = c.deviceOverlap(i);
      ints[at + 3] = c.hostOverlap(i);
      ints[at + 4] = c.diskOverlap(i);
      ints[at + 5] = c.activeMatched(i);
      loads[2 * k] = c.prefillTokens(i);
      loads[2 * k + 1] = c.decodeBlocks(i);
      costs[k] = c.cost(i);
      recentBookings[k] = c.recentBookings(i);
      if (i == c.chosen()) {
        picked = k;
      }
    }
    size = kept;
    chosen = picked;
    aggregates(c);
    candidatesTotal = total;
    filteredTotal = c.filteredCount();
    int filteredKept = Math.min(filteredTotal, Decision.MAX_RANKS);
    if (filteredRanks.length < filteredKept) {
      filteredRanks = new int[filteredKept];
      filteredReasons = new byte[filteredKept];
    }
    for (int k = 0; k < filteredKept; k++) {
      filteredRanks[k] = c.filteredRank(k);
      filteredReasons[k] = (byte) c.filteredReason(k).ordinal();
    }
    filteredCount = filteredKept;
    return this;
  }

  /**
   * What scorers read over every candidate ({@code ScoredCandidates}' aggregates), in one pass: a decision keeps at
   * most {@link Decision#MAX_RANKS} candidates, and its terms must come out as the selection scored them.
   */
  private void aggregates(Candidates c) {
    long minPrefill = Long.MAX_VALUE;
    int depth = 0;
    double boundLoad = 0;
    int deepest = 0;
    int deepestCount = 0;
    for (int i = 0; i < c.size(); i++) {
      minPrefill = Math.min(minPrefill, c.prefillTokens(i));
      depth = Math.max(depth, c.deviceOverlap(i) + c.hostOverlap(i) + c.diskOverlap(i));
      boundLoad += c.boundLoad(i);
      int device = c.deviceOverlap(i);
      if (device > deepest) {
        deepest = device;
        deepestCount = 1;
      } else if (device == deepest) {
        deepestCount++;
      }
    }
    minPrefillTokens = c.size() == 0 ? 0 : minPrefill;
    cachedDepth = depth;
    totalBoundLoad = boundLoad;
    deepestDeviceOverlap = deepest;
    deepestDeviceOverlapCount = deepestCount;
  }

  /** The pick first, then the cheapest other candidates, {@link Decision#MAX_RANKS} in all (a model this large). */
  private static int[] cheapestWithPick(Candidates c) {
    Integer[] others = new Integer[c.size() - 1];
    for (int i = 0, k = 0; i < c.size(); i++) {
      if (i != c.chosen()) {
        others[k++] = i;
      }
    }
    Arrays.sort(others, (a, b) -> Double.compare(c.cost(a), c.cost(b)));
    int[] order = new int[Decision.MAX_RANKS];
    order[0] = c.chosen();
    for (int k = 1; k < Decision.MAX_RANKS; k++) {
      order[k] = others[k - 1];
    }
    return order;
  }

  /**
   * The decision as an immutable copy. A reader racing a writer may copy a torn state: it must check, after the
   * copy, that the buffer did not change meanwhile (see {@link DecisionLog}); the copy itself never throws.
   */
  Decision snapshot() {
    int kept = size;
    int filteredKept = filteredCount;
    return new Decision(kind, unixMs, nanos, view, request, queue, Arrays.copyOf(ints, kept * INTS),
        Arrays.copyOf(loads, kept * 2), Arrays.copyOf(costs, kept), Arrays.copyOf(recentBookings, kept), chosen,
        candidatesTotal, minPrefillTokens, cachedDepth, totalBoundLoad, deepestDeviceOverlap, deepestDeviceOverlapCount,
        Arrays.copyOf(filteredRanks, filteredKept), Arrays.copyOf(filteredReasons, filteredKept), filteredTotal);
  }
}
