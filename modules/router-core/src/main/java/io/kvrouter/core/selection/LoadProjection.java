package io.kvrouter.core.selection;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.policy.BusyThresholds;
import io.kvrouter.core.policy.PolicyConfig;
import java.util.Set;
import java.util.function.LongSupplier;

/** Load projection and reject thresholds: which ranks are candidates for a request, with their loads. */
public final class LoadProjection {
  private static final long NOT_READ = Long.MIN_VALUE;

  private LoadProjection() {}

  /**
   * Projects every eligible rank's load into {@code out} and applies the rejection rules in Dynamo's order: pinned
   * not allowed (or excluded) → pinned unknown → pinned overloaded → (no candidate left) all overloaded, else required taints
   * unmet (when a rank lacked one), else no endpoints. A {@code pinned_dp_rank} without a pinned worker is a strict
   * filter to the ranks of that data-parallel rank (each worker's ranks being [dp_start, dp_start + dp_size)), checked
   * before the others: no worker of the role having that rank is FAILED_PRECONDITION {@code UNKNOWN_DP_RANK}.
   *
   * @throws RoutingException when no candidate remains
   */
  public static void projectWorkerLoads(SelectionView view, SelectionRequest request, Candidates out, long nowMillis) {
    projectWorkerLoads(view, request, out, () -> nowMillis);
  }

  /**
   * As above, reading {@code clock} once, and only if some rank's heartbeat has to be checked; the candidates are the
   * ranks of the view's {@link SelectionView#singleRankRole single-rank role}.
   */
  public static void projectWorkerLoads(SelectionView view, SelectionRequest request, Candidates out,
      LongSupplier clock) {
    projectWorkerLoads(view, request, out, clock, view.singleRankRole());
  }

  /**
   * As above, the candidates being the ranks of workers of {@code role} (the others left out as {@link FilterReason#ROLE}),
   * narrowed last for the request's LoRA adapter ({@link LoraPlacement}).
   */
  public static void projectWorkerLoads(SelectionView view, SelectionRequest request, Candidates out,
      LongSupplier clock, WorkerRole role) {
    String pinned = request.pinnedWorker();
    Set<String> allowed = request.allowedWorkers();
    Set<String> excluded = request.excludedWorkers();
    if (pinned != null) {
      if ((!allowed.isEmpty() && !allowed.contains(pinned)) || excluded.contains(pinned)) {
        throw new RoutingError(RoutingError.Code.FAILED_PRECONDITION, RoutingError.PINNED_WORKER_NOT_ALLOWED,
            "pinned worker '" + RoutingError.echo(pinned) + "' is not in allowed_workers or is excluded")
            .toException();
      }
      WorkerConfig worker = view.worker(pinned);
      if (worker == null) {
        throw WorkerConfig.unknownWorker(view.model(), pinned);
      }
      if (worker.role() != role) {
        throw new RoutingError(RoutingError.Code.FAILED_PRECONDITION, RoutingError.PINNED_WORKER_ROLE,
            "pinned worker '" + RoutingError.echo(pinned) + "' is a " + worker.role().name().toLowerCase()
            + " worker; this selection chooses a " + role.name().toLowerCase() + " worker").toException();
      }
      Integer rank = request.pinnedDpRank();
      if (rank != null && view.indexOf(new Rank(pinned, rank)) < 0) {
        throw RoutingError.notFound(RoutingError.UNKNOWN_WORKER, "worker '" + RoutingError.echo(pinned)
            + "' has no dp rank " + rank).toException();
      }
    }
    // a dp rank pinned without a worker: only the ranks of that data-parallel rank are candidates
    Integer dpOnly = pinned == null ? request.pinnedDpRank() : null;
    if (dpOnly != null) {
      requireDpRank(view, role, dpOnly);
    }
    PolicyConfig policy = view.policy();
    long heartbeatTimeout = view.heartbeatTimeoutMillis();
    int ranks = view.rankCount();
    out.reset(ranks);
    int eligibleIgnoringOverload = 0;
    // the common request names no worker: test the filters per rank only when it does
    boolean byRole = view.workerCount(role) != view.workers().size();
    Set<String> required = request.placement() == null ? Set.of() : request.placement().requiredTaints();
    boolean filtered = pinned != null || dpOnly != null || !allowed.isEmpty() || !excluded.isEmpty() || byRole || !required.isEmpty();
    int missingTaints = 0;
    boolean thresholds = hasThresholds(policy);
    long windowMillis = policy.loadBoundFactor() > 0 ? policy.loadBoundWindowMillis() : 0;
    long nowMillis = windowMillis > 0 ? clock.getAsLong() : NOT_READ;
    for (int i = 0; i < ranks; i++) {
      if (filtered) {
        Rank rank = view.rank(i);
        if (byRole && view.rankWorker(i).role() != role) {
          out.filter(i, FilterReason.ROLE);
          continue;
        }
        if (pinned != null && (!rank.workerId().equals(pinned)
            || (request.pinnedDpRank() != null && rank.dpRank() != request.pinnedDpRank()))) {
          out.filter(i, FilterReason.PINNED);
          continue;
        }
        if (dpOnly != null && rank.dpRank() != dpOnly) {
          out.filter(i, FilterReason.PINNED);
          continue;
        }
        if (!allowed.isEmpty() && !allowed.contains(rank.workerId())) {
          out.filter(i, FilterReason.NOT_ALLOWED);
          continue;
        }
        if (!excluded.isEmpty() && excluded.contains(rank.workerId())) {
          out.filter(i, FilterReason.EXCLUDED);
          continue;
        }
        if (!required.isEmpty() && !view.rankWorker(i).hasTaints(required)) {
          out.filter(i, FilterReason.MISSING_TAINTS);
          missingTaints++;
          continue;
        }
      }
      LoadCell cell = view.cell(i);
      ReportedLoad reported = cell.reported();
      if (reported != null && heartbeatTimeout > 0) {
        if (nowMillis == NOT_READ) {
          nowMillis = clock.getAsLong();
        }
        if (!isAvailable(reported, heartbeatTimeout, nowMillis)) {
          out.filter(i, FilterReason.UNAVAILABLE);
          continue;
        }
      }
      eligibleIgnoringOverload++;
      RankLoad booked = cell.booked();
      if (thresholds && isOverloaded(policy, view.rankWorker(i), booked, reported)) {
        out.filter(i, FilterReason.OVERLOADED);
        continue;
      }
      out.add(i, booked.inFlight(), booked.prefillTokens(), booked.decodeBlocks(),
          windowMillis > 0 ? booked.recentBookingsAt(nowMillis, windowMillis) : 0);
    }
    LoraPlacement.narrow(view, request, out);
    if (out.size() == 0) {
      if (eligibleIgnoringOverload > 0) {
        if (pinned != null) {
          throw RoutingError.unavailable(RoutingError.PINNED_WORKER_OVERLOADED,
              "pinned worker '" + RoutingError.echo(pinned) + "' is overloaded").toException();
        }
        throw RoutingError.unavailable(RoutingError.ALL_WORKERS_OVERLOADED,
            "all " + eligibleIgnoringOverload + " eligible ranks of model '"
                + RoutingError.echo(view.model()) + "' are overloaded")
            .toException();
      }
      if (missingTaints > 0) {
        throw new RoutingError(RoutingError.Code.FAILED_PRECONDITION, RoutingError.REQUIRED_TAINTS_UNMET,
            "no eligible worker of model '" + RoutingError.echo(view.model()) + "' carries every required taint "
                + required + " (" + missingTaints + " ranks lack one)").toException();
      }
      throw RoutingError.unavailable(RoutingError.NO_ENDPOINTS,
          "no eligible worker for model '" + RoutingError.echo(view.model()) + "'").toException();
    }
  }

  /**
   * @throws RoutingException FAILED_PRECONDITION {@code UNKNOWN_DP_RANK} when no worker of {@code role} has
   *     {@code dpRank} among its ranks
   */
  private static void requireDpRank(SelectionView view, WorkerRole role, int dpRank) {
    for (WorkerConfig worker : view.workers().values()) {
      if (worker.role() == role && worker.hasRank(dpRank)) {
        return;
      }
    }
    throw new RoutingError(RoutingError.Code.FAILED_PRECONDITION, RoutingError.UNKNOWN_DP_RANK,
        "no " + role.name().toLowerCase() + " worker of model '" + RoutingError.echo(view.model())
            + "' has dp rank " + dpRank + " among its ranks [dp_start, dp_start + dp_size)").toException();
  }

  private static boolean hasThresholds(PolicyConfig policy) {
    return policy.activeDecodeBlocksThreshold() != null || policy.activePrefillTokensThreshold() != null
        || policy.activePrefillTokensThresholdFrac() != null;
  }

  /** A rank that never reported is never timed out; one that did must keep reporting. */
  public static boolean isAvailable(ReportedLoad reported, long heartbeatTimeoutMillis, long nowMillis) {
    return reported == null || heartbeatTimeoutMillis <= 0
        || nowMillis - reported.reportedAtMillis() <= heartbeatTimeoutMillis;
  }

  /**
   * Busy-threshold overload ({@link PolicyConfig#overload}): decode blocks above a fraction of the rank's KV blocks,
   * or prefill tokens above an absolute threshold or a fraction of max batched tokens. Judged on the larger of booked
   * and engine-reported load.
   */
  public static boolean isOverloaded(PolicyConfig policy, WorkerConfig worker, RankLoad booked, ReportedLoad reported) {
    return isBusy(policy.overload(), worker, booked, reported, 0);
  }

  /**
   * Whether a rank is above one of {@code thresholds}, judged on the larger of booked and engine-reported load, with
   * {@code addedDecodeBlocks} more decode blocks (a request about to be placed there).
   */
  public static boolean isBusy(BusyThresholds thresholds, WorkerConfig worker, RankLoad booked,
      ReportedLoad reported, long addedDecodeBlocks) {
    long decode = booked.decodeBlocks();
    long prefill = booked.prefillTokens();
    if (reported != null) {
      decode = Math.max(decode, reported.decodeBlocks());
      prefill = Math.max(prefill, reported.prefillTokens());
    }
    return thresholds.exceeded(worker, prefill, decode + addedDecodeBlocks);
  }
}
