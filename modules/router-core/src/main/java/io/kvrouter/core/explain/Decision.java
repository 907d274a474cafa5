package io.kvrouter.core.explain;

import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.policy.PolicyConfig;
import io.kvrouter.core.policy.ScoredCandidates;
import io.kvrouter.core.policy.Scorers;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.FilterReason;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One selection as recorded: compact copies of the candidate arrays and of the filtered ranks, with the view and
 * request it ran on (both immutable). Everything readable (cost terms, names, margin) is derived only
 * when it is read ({@link #explain}), from the same view, request and scorer code the selection used.
 */
public final class Decision {
  /** At most this many candidates and this many filtered ranks are kept per decision; the rest are counted. */
  public static final int MAX_RANKS = 64;

  private static final int INTS = DecisionBuffer.INTS;
  private static final FilterReason[] REASONS = FilterReason.values();

  private final DecisionKind kind;
  private final long unixMs;
  /** Orders a node's decisions exactly (millis tie); comparable only within one JVM. */
  private final long nanos;
  private final SelectionView view;
  private final SelectionRequest request;
  private final QueueWait queue;
  private final int[] ints;
  private final long[] loads;
  private final double[] costs;
  private final double[] recentBookings;
  private final int chosen;
  private final int candidatesTotal;
  private final long minPrefillTokens;
  private final int cachedDepth;
  private final double totalBoundLoad;
  private final int deepestDeviceOverlap;
  private final int deepestDeviceOverlapCount;
  private final int[] filteredRanks;
  private final byte[] filteredReasons;
  private final int filteredTotal;

  Decision(DecisionKind kind, long unixMs, long nanos, SelectionView view, SelectionRequest request, QueueWait queue,
      int[] ints, long[] loads, double[] costs, double[] recentBookings, int chosen, int candidatesTotal,
      long minPrefillTokens, int cachedDepth, double totalBoundLoad, int deepestDeviceOverlap, int deepestDeviceOverlapCount,
      int[] filteredRanks, byte[] filteredReasons, int filteredTotal) {
    this.kind = kind;
    this.unixMs = unixMs;
    this.nanos = nanos;
    this.view = view;
    this.request = request;
    this.queue = queue;
    this.ints = ints;
    this.loads = loads;
    this.costs = costs;
    this.recentBookings = recentBookings;
    this.chosen = chosen;
    this.candidatesTotal = candidatesTotal;
    this.minPrefillTokens = minPrefillTokens;
    this.cachedDepth = cachedDepth;
    this.totalBoundLoad = totalBoundLoad;
    this.deepestDeviceOverlap = deepestDeviceOverlap;
    this.deepestDeviceOverlapCount = deepestDeviceOverlapCount;
    this.filteredRanks = filteredRanks;
    this.filteredReasons = filteredReasons;
    this.filteredTotal = filteredTotal;
  }

  /**
   * Copies what {@code c} holds right after {@link Selector#select} returned on {@code view} for {@code request}
   * (same thread, before its next selection): for one caller that wants this decision's explanation. Recording
   * into a {@link DecisionLog} copies into reused buffers instead ({@link DecisionLog#record}).
   */
  public static Decision capture(DecisionKind kind, SelectionView view, SelectionRequest request, Candidates c,
      long unixMs) {
    return new DecisionBuffer().fill(kind, view, request, c, unixMs, null).snapshot();
  }

  public DecisionKind kind() {
    return kind;
  }

  public long unixMs() {
    return unixMs;
  }

  long nanos() {
    return nanos;
  }

  /** Renders the decision readably, as decided by {@code node}. */
  public Explanation explain(String node) {
    PolicyConfig policy = view.policy();
    Recorded recorded = new Recorded();
    int requestBlocks = Scorers.requestBlocks(request.islTokens(), view.blockSize());
    List<Explanation.CandidateExplanation> candidates = new ArrayList<>(costs.length);
    boolean hasRunnerUp = false;
    double runnerUp = 0;
    for (int k = 0; k < costs.length; k++) {
      candidates.add(new Explanation.CandidateExplanation(view.rank(ints[k * INTS]), recorded.inFlight(k),
          recorded.prefillTokens(k), recorded.decodeBlocks(k), recorded.deviceOverlap(k), recorded.hostOverlap(k),
          recorded.diskOverlap(k), recorded.activeMatched(k), costs[k], costTerms(policy, recorded, k),
          k == chosen, recentBookings[k]));
      if (k != chosen && (!hasRunnerUp || costs[k] < runnerUp)) {
        hasRunnerUp = true;
        runnerUp = costs[k];
      }
    }
    List<Explanation.FilteredRank> filtered = new ArrayList<>(filteredRanks.length);
    for (int k = 0; k < filteredRanks.length; k++) {
      filtered.add(new Explanation.FilteredRank(view.rank(filteredRanks[k]),
          REASONS[filteredReasons[k]].name()));
    }
    int pickedRank = ints[chosen * INTS];
    WorkerConfig worker = view.rankWorker(pickedRank);
    double pickedCost = costs[chosen];
    return new Explanation(kind.wireName(), unixMs, request.requestId() == null ? "" : request.requestId(),
        policy.policy().wireName(), view.version(), requestBlocks, candidates, candidatesTotal, filtered,
        filteredTotal, view.rank(pickedRank), worker.endpoint(), worker.region(), pickedCost, hasRunnerUp,
        hasRunnerUp ? runnerUp : 0, hasRunnerUp ? runnerUp - pickedCost : 0, node, queue);
  }

  /** The terms the policy's scorer added up into candidate k's cost (none for policies that ignore cost). */
  private Map<String, Double> costTerms(PolicyConfig policy, Recorded c, int k) {
    Map<String, Double> terms = policy.policy().scorer().terms(Selector.scoring(policy, request, view.blockSize()), c, k);
    io.kvrouter.core.selection.PlacementConstraints placement = request.placement();
    io.kvrouter.core.selection.SessionAffinity session = request.session();
    boolean tainted = placement != null && !placement.preferredTaints().isEmpty() && request.pinnedWorker() == null
        && view.rankWorker(ints[k * INTS]).hasTaints(placement.preferredTaints());
    boolean bound = session != null && session.boundRank() != null
        && view.rank(ints[k * INTS]).equals(session.boundRank());
    if (!tainted && !bound) {
      return terms;
    }
    // what Selector.preferTainted, then Selector.preferBoundRank, did to the scorer's cost
    double scored = 0;
    for (double term : terms.values()) {
      scored += term;
    }
    Map<String, Double> adjusted = new java.util.LinkedHashMap<>(terms);
    double afterTaints = scored;
    if (tainted) {
      afterTaints = scored * placement.preferredTaintMultiplier();
      adjusted.put("preferred_taints", afterTaints - scored);
    }
    if (bound) {
      adjusted.put("session_affinity", costs[k] - afterTaints);
    }
    return adjusted;
  }

  /** The recorded arrays as the scorers read candidates, so the terms come from the scorer's own code. */
  private final class Recorded implements ScoredCandidates {
    @Override
    public int size() {
      return costs.length;
    }

    @Override
    public int inFlight(int k) {
      return ints[k * INTS + 1];
    }

    @Override
    public long prefillTokens(int k) {
      return loads[2 * k];
    }

    @Override
    public long decodeBlocks(int k) {
      return loads[2 * k + 1];
    }

    @Override
    public int deviceOverlap(int k) {
      return ints[k * INTS + 2];
    }

    @Override
    public int hostOverlap(int k) {
      return ints[k * INTS + 3];
    }

    @Override
    public int diskOverlap(int k) {
      return ints[k * INTS + 4];
    }

    @Override
    public int activeMatched(int k) {
      return ints[k * INTS + 5];
    }

    /** Over every candidate of the selection, kept or not, as the scorer read it. */
    @Override
    public long minPrefillTokens() {
      return minPrefillTokens;
    }

    @Override
    public int cachedDepth() {
      return cachedDepth;
    }

    @Override
    public double recentBookings(int k) {
      return recentBookings[k];
    }

    @Override
    public double totalBoundLoad() {
      return totalBoundLoad;
    }

    @Override
    public int deepestDeviceOverlap() {
      return deepestDeviceOverlap;
    }

    @Override
    public int deepestDeviceOverlapCount() {
      return deepestDeviceOverlapCount;
    }

    @Override
    public double cost(int k) {
      return costs[k];
    }

    @Override
    public void setCost(int k, double cost) {
      throw new UnsupportedOperationException("a recorded decision is read-only");
    }

    @Override
    public double temperature() {
      return 0;
    }

    @Override
    public double[] scratchWeights() {
      throw new UnsupportedOperationException("a recorded decision is read-only");
    }
  }
}
