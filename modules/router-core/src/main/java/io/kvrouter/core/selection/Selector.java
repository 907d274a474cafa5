package io.kvrouter.core.selection;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.policy.PolicyConfig;
import io.kvrouter.core.policy.Scorer;
import io.kvrouter.core.policy.Scorers;
import io.kvrouter.core.policy.Scoring;
import java.util.function.LongSupplier;

/**
 * The one selection function. The admission actor (for a Book) and the inline advisory path (for a Select) both call
 * {@link #select}: project loads, compute costs outside the picker lock, pick under it, build the answer.
 */
public final class Selector {
  private Selector() {}

  public static SelectionResult select(SelectionView view, SelectionRequest request, Candidates scratch,
      long nowMillis) {
    return select(view, request, scratch, () -> nowMillis);
  }

  /**
   * As {@link #select(SelectionView, SelectionRequest, Candidates, long)}, reading {@code clock} only if a rank's
   * heartbeat must be checked: a wall-clock read costs as much as a small pick on some virtual machines.
   */
  public static SelectionResult select(SelectionView view, SelectionRequest request, Candidates scratch,
      LongSupplier clock) {
    if (view == null || view.isEmpty()) {
      throw RoutingError.unknownModel(request.model()).toException();
    }
    return select(view, request, scratch, clock, view.singleRankRole());
  }

  /** As above, choosing among the ranks of workers of {@code role}. */
  public static SelectionResult select(SelectionView view, SelectionRequest request, Candidates scratch,
      LongSupplier clock, io.kvrouter.core.model.WorkerRole role) {
    if (view == null || view.isEmpty()) {
      throw RoutingError.unknownModel(request.model()).toException();
    }
    LoadProjection.projectWorkerLoads(view, request, scratch, clock, role);
    computeCosts(view, request, scratch);
    preferTainted(view, request, scratch);
    preferBoundRank(view, request, scratch);
    int chosen = view.picker().pick(scratch);
    scratch.choose(chosen);
    return SelectionAnswers.build(view, request, scratch, chosen);
  }

  /**
   * Fills every candidate's cost with the view's policy's scorer, the request's overrides taking precedence over the
   * policy's parameters; the candidates' KV overlaps are looked up first when the scorer reads them.
   */
  static void computeCosts(SelectionView view, SelectionRequest request, Candidates c) {
    PolicyConfig policy = view.policy();
    Scorer scorer = policy.policy().scorer();
    long[] hashes = request.blockHashes();
    if (scorer.readsOverlaps() && hashes.length > 0) {
      view.overlapSource().overlaps(view, hashes, c);
      view.activePrefix().matched(view, hashes, c);
    }
    scorer.score(fill(c.scoring(), policy, request, view.blockSize()), c);
    c.setTemperature(request.temperature() != null ? request.temperature() : policy.temperature());
  }

  /**
   * Preferred taints ({@link PlacementConstraints}): a candidate whose worker carries every one has its cost
   * multiplied by the request's multiplier (costs are non-negative). Not for a pinned request, as in Dynamo.
   */
  static void preferTainted(SelectionView view, SelectionRequest request, Candidates c) {
    PlacementConstraints placement = request.placement();
    if (placement == null || placement.preferredTaints().isEmpty() || request.pinnedWorker() != null) {
      return;
    }
    for (int i = 0; i < c.size(); i++) {
      if (view.rankWorker(c.rankIndex(i)).hasTaints(placement.preferredTaints())) {
        c.setCost(i, c.cost(i) * placement.preferredTaintMultiplier());
      }
    }
  }

  /**
   * A soft session binding ({@link SessionAffinity#boundRank}): the bound rank's cost counts {@code softFactor} times,
   * and one step less, so it also wins ties (a cost of 0 too). Nothing when the rank is not a candidate.
   */
  static void preferBoundRank(SelectionView view, SelectionRequest request, Candidates c) {
    SessionAffinity session = request.session();
    if (session == null || session.boundRank() == null) {
      return;
    }
    int bound = view.indexOf(session.boundRank());
    for (int i = 0; i < c.size(); i++) {
      if (c.rankIndex(i) == bound) {
        c.setCost(i, preferredCost(c.cost(i), session.softFactor()));
        return;
      }
    }
  }

  /** The cost of a softly bound rank whose own cost is {@code cost}. */
  public static double preferredCost(double cost, double softFactor) {
    return Math.nextDown(softFactor * cost);
  }

  /**
   * The most prompt tokens any candidate {@code c} holds cached ({@link SelectionAnswers#cachedTokens}), looking the
   * overlaps up whatever the policy: {@code c} was filled by {@link LoadProjection#projectWorkerLoads} for
   * {@code request} on {@code view}. 0 without candidates or block hashes.
   */
  public static int bestCachedTokens(SelectionView view, SelectionRequest request, Candidates c) {
    long[] hashes = request.blockHashes();
    if (hashes.length == 0 || c.size() == 0) {
      return 0;
    }
    view.overlapSource().overlaps(view, hashes, c);
    int best = 0;
    for (int i = 0; i < c.size(); i++) {
      best = Math.max(best, SelectionAnswers.cachedTokens(view, request, c, i));
    }
    return best;
  }

  /** What the policy's scorer reads of {@code request} on a model of {@code blockSize}, overrides applied. */
  public static Scoring scoring(PolicyConfig policy, SelectionRequest request, int blockSize) {
    return fill(new Scoring(), policy, request, blockSize);
  }

  /** {@code into} filled with what {@link #scoring} answers. */
  private static Scoring fill(Scoring into, PolicyConfig policy, SelectionRequest request, int blockSize) {
    return into.set(request.islTokens(), blockSize, Scorers.requestBlocks(request.islTokens(), blockSize),
        overlapCredit(policy, request), prefillLoadScale(policy, request), policy.hostCacheHitWeight(),
        policy.diskCacheHitWeight(), policy.overlapCreditDecay(), policy.decodeActiveRequestWeight(),
        policy.sharedCacheMultiplier(), policy.loadBoundFactor(), policy.prefillBacklogWeight());
  }

  /** The kv overlap credit a request is scored with: its override, else the policy's. */
  public static double overlapCredit(PolicyConfig policy, SelectionRequest request) {
    return request.overlapCredit() != null ? request.overlapCredit() : policy.overlapCredit();
  }

  /** The kv prefill load scale a request is scored with: its override, else the policy's. */
  public static double prefillLoadScale(PolicyConfig policy, SelectionRequest request) {
    return request.prefillLoadScale() != null ? request.prefillLoadScale() : policy.prefillLoadScale();
  }
}
