package io.kvrouter.core.selection;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.policy.BusyThresholds;
import io.kvrouter.core.policy.DisaggregationConfig;
import io.kvrouter.core.policy.Scorers;
import java.util.function.LongSupplier;

/**
 * Selection across a model's worker roles, as Dynamo's prefill router does: a Book chooses an aggregated rank, a
 * decode rank alone (doing its own prefill), or a prefill rank and a decode rank ({@link Disaggregation} says which
 * the request accepts; {@link #plan} which the model allows). The decode half is chosen first, on load only (overlap
 * credit 0, no prefill load: the prefill happens elsewhere), so that conditional disaggregation
 * ({@link DisaggregationConfig}: Dynamo's {@code isl_bounding}, {@code prefill_load} and {@code isl_or_load} rules,
 * and the decode-busy guard) can judge the prompt left uncached on it and its load; then the prefill half by the
 * policy's full cost. A request pinning a worker pins the half of that worker's role (so does a hard
 * session binding, which names the rank a Book's answer leads with: the prefill rank of a pair); placement
 * constraints and a session's soft preference apply to both halves.
 */
public final class DisaggregatedSelection {
  private DisaggregatedSelection() {}

  /** What a Book chooses. */
  public enum Plan {
    /** One aggregated rank. */
    AGGREGATED,
    /** One decode rank doing its own prefill (the model has no aggregated worker, or the prefill was skipped). */
    DECODE_ONLY,
    /** A prefill rank and a decode rank. */
    PAIR
  }

  /**
   * The plan the model's workers allow for {@code request}; a model without workers plans AGGREGATED (the selection
   * then reports the unknown model).
   *
   * @throws io.kvrouter.core.error.RoutingException FAILED_PRECONDITION {@code NO_AGGREGATED_WORKERS},
   *     {@code NO_PREFILL_WORKERS} or {@code NO_DECODE_WORKERS} when the request asks for what the model lacks
   */
  public static Plan plan(SelectionView view, SelectionRequest request) {
    if (view == null || view.isEmpty()) {
      return Plan.AGGREGATED;
    }
    int aggregated = view.workerCount(WorkerRole.AGGREGATED);
    int prefill = view.workerCount(WorkerRole.PREFILL);
    int decode = view.workerCount(WorkerRole.DECODE);
    switch (request.disaggregation()) {
      case AGGREGATED -> {
        if (aggregated == 0) {
          throw precondition(RoutingError.NO_AGGREGATED_WORKERS, view, "has no aggregated worker (" + prefill
              + " prefill, " + decode + " decode); send disaggregation AUTO or DISAGGREGATED");
        }
        return Plan.AGGREGATED;
      }
      case DISAGGREGATED -> {
        if (prefill == 0) {
          throw precondition(RoutingError.NO_PREFILL_WORKERS, view, "has no prefill worker to disaggregate with");
        }
        if (decode == 0) {
          throw precondition(RoutingError.NO_DECODE_WORKERS, view, "has no decode worker to disaggregate with");
        }
        return Plan.PAIR;
      }
      default -> {
        if (prefill > 0 && decode > 0) {
          return Plan.PAIR;
        }
        if (aggregated > 0) {
          return Plan.AGGREGATED;
        }
        if (decode > 0) {
          return Plan.DECODE_ONLY;
        }
        throw precondition(RoutingError.NO_DECODE_WORKERS, view, "has prefill workers only: nothing can decode");
      }
    }
  }

  /**
   * Selects for {@code request} as {@link #plan} says: the candidates of the prefill half (or of the single rank) are
   * left in {@code scratch}, those of the decode half in {@code decodeScratch}. A pair's answer is the prefill
   * half's with {@link SelectionResult#decode} set; a skipped prefill answers the decode half alone.
   */
  public static SelectionResult select(SelectionView view, SelectionRequest request, Candidates scratch,
      Candidates decodeScratch, LongSupplier clock) {
    Plan plan = plan(view, request);
    return switch (plan) {
      case AGGREGATED -> Selector.select(view, request, scratch, clock, WorkerRole.AGGREGATED);
      case DECODE_ONLY -> Selector.select(view, request, scratch, clock, WorkerRole.DECODE);
      case PAIR -> pair(view, request, scratch, decodeScratch, clock);
    };
  }

  private static SelectionResult pair(SelectionView view, SelectionRequest request, Candidates scratch,
      Candidates decodeScratch, LongSupplier clock) {
    SelectionRequest decodeRequest = half(view, request, WorkerRole.DECODE);
    SelectionResult decode = Selector.select(view, decodeRequest, decodeScratch, clock, WorkerRole.DECODE);
    DisaggregationConfig conditional = view.policy().disaggregation();
    SelectionResult prefill = null;
    if (request.disaggregation() == Disaggregation.AUTO && conditional.enabled()) {
      boolean bypass = conditional.islBypass(request.islTokens(), decode.cachedTokens());
      if (!bypass && conditional.rule().usesPrefillLoad()) {
        // Dynamo's prefill_load: skip the prefill worker the pair would take when it is already busy
        prefill = prefillHalf(view, request, scratch, clock);
        bypass = isBusy(view, prefill.rank(), conditional.prefillBusy(), 0);
      }
      // the decode-busy guard: a decode rank that doing the prefill too would fill past the fraction keeps the pair
      if (bypass && !isBusy(view, decode.rank(), conditional.decodeBusy(),
          Scorers.requestBlocks(request.islTokens(), view.blockSize()))) {
        // the decode rank does its own prefill: chosen again among decode ranks with the full cost (its prompt's
        // prefill and cache credit count now), as Dynamo charges a bypassed decode worker for the prompt
        return Selector.select(view, request, scratch, clock, WorkerRole.DECODE);
      }
    }
    if (prefill == null) {
      prefill = prefillHalf(view, request, scratch, clock);
    }
    return prefill.withDecode(decode);
  }

  private static SelectionResult prefillHalf(SelectionView view, SelectionRequest request, Candidates scratch,
      LongSupplier clock) {
    return Selector.select(view, half(view, request, WorkerRole.PREFILL), scratch, clock, WorkerRole.PREFILL);
  }

  private static boolean isBusy(SelectionView view, Rank rank, BusyThresholds thresholds, long addedDecodeBlocks) {
    int index = view.indexOf(rank);
    LoadCell cell = view.cell(index);
    return LoadProjection.isBusy(thresholds, view.rankWorker(index), cell.booked(), cell.reported(),
        addedDecodeBlocks);
  }

  /**
   * {@code request} for one half of a pair: the pin kept only for the half of the pinned worker's role; the decode
   * half scored on load alone (overlap credit 0, prefill load scale 0), as Dynamo's decode router override does.
   */
  public static SelectionRequest half(SelectionView view, SelectionRequest request, WorkerRole role) {
    SelectionRequest out = request;
    if (request.pinnedWorker() != null) {
      var pinned = view.worker(request.pinnedWorker());
      if (pinned != null && pinned.role() != role) {
        out = new SelectionRequest(request.model(), request.requestId(), request.blockHashes(),
            request.islTokens(), request.expectedOutputTokens(), null, null, request.allowedWorkers(),
            request.excludedWorkers(), request.priority(), request.temperature(), request.overlapCredit(),
            request.prefillLoadScale(), request.strictPriority(), request.policyClass(), request.retry(),
            request.session(), request.placement(), request.loraName(), request.disaggregation());
      }
    }
    if (role == WorkerRole.DECODE) {
      out = new SelectionRequest(out.model(), out.requestId(), out.blockHashes(), out.islTokens(),
          out.expectedOutputTokens(), out.pinnedWorker(), out.pinnedDpRank(), out.allowedWorkers(),
          out.excludedWorkers(), out.priority(), out.temperature(), 0.0, 0.0, out.strictPriority(), out.policyClass(),
          out.retry(), out.session(), out.placement(), out.loraName(), out.disaggregation());
    }
    return out;
  }

  private static RuntimeException precondition(String reason, SelectionView view, String what) {
    return new RoutingError(RoutingError.Code.FAILED_PRECONDITION, reason,
        "model '" + RoutingError.echo(view.model()) + "' " + what).toException();
  }
}
