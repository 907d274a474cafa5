package io.kvrouter.core.explain;

import io.kvrouter.core.model.Rank;
import java.util.List;
import java.util.Map;

/**
 * One decision as people read it: the candidates with their loads, overlaps, cost and cost terms, the ranks the
 * filters left out and why, the pick and its margin to the runner-up. Rendered from a {@link Decision} when read.
 *
 * @param candidatesTotal candidates the selection had (more than {@code candidates} when the record was truncated)
 * @param filteredTotal ranks left out (more than {@code filtered} when truncated)
 * @param margin {@code runnerUpCost - pickedCost}; 0 without a runner-up; negative when the policy did not pick the
 *     cheapest (power_of_two, a softmax temperature, round_robin, random)
 * @param node the node that decided
 * @param queue why a Book waited in the admission queue before this decision; null when it did not wait
 */
public record Explanation(
    String kind,
    long unixMs,
    String requestId,
    String policy,
    long viewVersion,
    int requestBlocks,
    List<CandidateExplanation> candidates,
    int candidatesTotal,
    List<FilteredRank> filtered,
    int filteredTotal,
    Rank picked,
    String pickedEndpoint,
    String pickedRegion,
    double pickedCost,
    boolean hasRunnerUp,
    double runnerUpCost,
    double margin,
    String node,
    QueueWait queue) {

  /**
   * One candidate rank; {@code costTerms} add up to {@code cost} (kv: prefill, decode, active; in_flight).
   * {@code recentBookings}: its decayed count of recent bookings, which the kv load bound counts beside its in-flight
   * requests (0 while {@code load_bound_window} is off).
   */
  public record CandidateExplanation(
      Rank rank,
      int inFlight,
      long prefillTokens,
      long decodeBlocks,
      int deviceOverlap,
      int hostOverlap,
      int diskOverlap,
      int activeMatched,
      double cost,
      Map<String, Double> costTerms,
      boolean picked,
      double recentBookings) {}

  /** A rank the filters left out; {@code reason} is a {@link io.kvrouter.core.selection.FilterReason} name. */
  public record FilteredRank(Rank rank, String reason) {}
}
