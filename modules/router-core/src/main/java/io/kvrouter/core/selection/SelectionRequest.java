package io.kvrouter.core.selection;

import java.util.Set;

/**
 * What one selection needs, already reduced at the edge: prompts travel as sequence hashes of full blocks (never as
 * tokens) so the record stays small enough for an actor message. Null overrides fall back to the model's policy.
 *
 * <p>{@code allowedWorkers} (when non-empty) names the only candidates; {@code excludedWorkers} names workers that
 * are never candidates, e.g. those a front already tried for this request (a retry books again without them).
 * Exclusion is applied after the allow list, so a worker in both is excluded.
 *
 * <p>The admission queue reads three more fields: {@code priority} (the queue's priority jump: FCFS orders a Book as
 * if it had waited {@code priority} seconds longer, WSPT weighs it {@code 1 + priority}; negative counts as 0),
 * {@code strictPriority} (a tier: a higher one always leaves the queue first within its class) and
 * {@code policyClass} (the class or family the request names; empty: none).
 *
 * <p>{@code retry} is how many times the client sent this Book before after losing its answer: it decides which of
 * a booking's calls hold it (a call numbered higher supersedes the earlier ones; see {@code Booking}).
 *
 * <p>{@code session} (null: none) is the request's session and the affinity it asks for ({@link SessionAffinity});
 * {@code placement} (null: none) its required and preferred taints ({@link PlacementConstraints}).
 *
 * <p>{@code loraName} is the LoRA adapter the request runs with ("" for the base model): selection narrows to the
 * workers that have it loaded, or places a cold adapter on one worker ({@link LoraPlacement}).
 * {@code disaggregation} says how a Book uses prefill and decode workers ({@link Disaggregation}).
 */
public record SelectionRequest(
    String model,
    String requestId,
    long[] blockHashes,
    int islTokens,
    int expectedOutputTokens,
    String pinnedWorker,
    Integer pinnedDpRank,
    Set<String> allowedWorkers,
    Set<String> excludedWorkers,
    int priority,
    Double temperature,
    Double overlapCredit,
    Double prefillLoadScale,
    int strictPriority,
    String policyClass,
    int retry,
    SessionAffinity session,
    PlacementConstraints placement,
    String loraName,
    Disaggregation disaggregation) {

  private static final long[] NO_HASHES = new long[0];

  public SelectionRequest {
    blockHashes = blockHashes == null ? NO_HASHES : blockHashes;
    pinnedWorker = pinnedWorker == null || pinnedWorker.isEmpty() ? null : pinnedWorker;
    allowedWorkers = allowedWorkers == null ? Set.of() : allowedWorkers;
    excludedWorkers = excludedWorkers == null ? Set.of() : excludedWorkers;
    policyClass = policyClass == null ? "" : policyClass;
    retry = Math.max(0, retry);
    placement = placement == null || placement.isEmpty() ? null : placement;
    loraName = loraName == null ? "" : loraName;
    disaggregation = disaggregation == null ? Disaggregation.AUTO : disaggregation;
  }

  /** A request of the base model (no LoRA adapter), disaggregated as the model's workers allow. */
  public SelectionRequest(String model, String requestId, long[] blockHashes, int islTokens, int expectedOutputTokens,
      String pinnedWorker, Integer pinnedDpRank, Set<String> allowedWorkers, Set<String> excludedWorkers,
      int priority, Double temperature, Double overlapCredit, Double prefillLoadScale, int strictPriority,
      String policyClass, int retry, SessionAffinity session, PlacementConstraints placement) {
    this(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker, pinnedDpRank, allowedWorkers,
        excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, strictPriority, policyClass, retry,
        session, placement, "", Disaggregation.AUTO);
  }

  /** A request of no session and no placement constraint. */
  public SelectionRequest(String model, String requestId, long[] blockHashes, int islTokens, int expectedOutputTokens,
      String pinnedWorker, Integer pinnedDpRank, Set<String> allowedWorkers, Set<String> excludedWorkers,
      int priority, Double temperature, Double overlapCredit, Double prefillLoadScale, int strictPriority,
      String policyClass, int retry, String loraName, Disaggregation disaggregation) {
    this(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker, pinnedDpRank, allowedWorkers,
        excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, strictPriority, policyClass, retry,
        null, null, loraName, disaggregation);
  }

  /** A request of no placement constraint, of the base model. */
  public SelectionRequest(String model, String requestId, long[] blockHashes, int islTokens, int expectedOutputTokens,
      String pinnedWorker, Integer pinnedDpRank, Set<String> allowedWorkers, Set<String> excludedWorkers,
      int priority, Double temperature, Double overlapCredit, Double prefillLoadScale, int strictPriority,
      String policyClass, int retry, SessionAffinity session) {
    this(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker, pinnedDpRank, allowedWorkers,
        excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, strictPriority, policyClass, retry,
        session, null, "", Disaggregation.AUTO);
  }

  /** A request of no session, of the base model. */
  public SelectionRequest(String model, String requestId, long[] blockHashes, int islTokens, int expectedOutputTokens,
      String pinnedWorker, Integer pinnedDpRank, Set<String> allowedWorkers, Set<String> excludedWorkers,
      int priority, Double temperature, Double overlapCredit, Double prefillLoadScale, int strictPriority,
      String policyClass, int retry) {
    this(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker, pinnedDpRank, allowedWorkers,
        excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, strictPriority, policyClass, retry,
        null, null, "", Disaggregation.AUTO);
  }

  /** A first send (retry 0). */
  public SelectionRequest(String model, String requestId, long[] blockHashes, int islTokens, int expectedOutputTokens,
      String pinnedWorker, Integer pinnedDpRank, Set<String> allowedWorkers, Set<String> excludedWorkers,
      int priority, Double temperature, Double overlapCredit, Double prefillLoadScale, int strictPriority,
      String policyClass) {
    this(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker, pinnedDpRank, allowedWorkers,
        excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, strictPriority, policyClass, 0);
  }

  /** A request in no strict tier and naming no class. */
  public SelectionRequest(String model, String requestId, long[] blockHashes, int islTokens, int expectedOutputTokens,
      String pinnedWorker, Integer pinnedDpRank, Set<String> allowedWorkers, Set<String> excludedWorkers,
      int priority, Double temperature, Double overlapCredit, Double prefillLoadScale) {
    this(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker, pinnedDpRank, allowedWorkers,
        excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, 0, "");
  }

  /** A request that excludes no worker, in no strict tier and naming no class. */
  public SelectionRequest(String model, String requestId, long[] blockHashes, int islTokens,
      int expectedOutputTokens, String pinnedWorker, Integer pinnedDpRank, Set<String> allowedWorkers, int priority,
      Double temperature, Double overlapCredit, Double prefillLoadScale) {
    this(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker, pinnedDpRank, allowedWorkers,
        Set.of(), priority, temperature, overlapCredit, prefillLoadScale);
  }

  /** This request under another request id (a retry books under a new one). */
  public SelectionRequest withRequestId(String id) {
    return new SelectionRequest(model, id, blockHashes, islTokens, expectedOutputTokens, pinnedWorker, pinnedDpRank,
        allowedWorkers, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, strictPriority,
        policyClass, retry, session, placement, loraName, disaggregation);
  }

  /** This request with {@code excluded} as its excluded workers. */
  public SelectionRequest withExcludedWorkers(Set<String> excluded) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker,
        pinnedDpRank, allowedWorkers, excluded, priority, temperature, overlapCredit, prefillLoadScale, strictPriority,
        policyClass, retry, session, placement, loraName, disaggregation);
  }

  /** This request with {@code allowed} as its allowed workers (recovery mode's admissible workers too). */
  public SelectionRequest withAllowedWorkers(Set<String> allowed) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker,
        pinnedDpRank, allowed, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, strictPriority,
        policyClass, retry, session, placement, loraName, disaggregation);
  }

  /** This request in strict tier {@code tier} of the class or family {@code policyClassName}. */
  public SelectionRequest withQueueing(int tier, String policyClassName) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker,
        pinnedDpRank, allowedWorkers, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale, tier,
        policyClassName, retry, session, placement, loraName, disaggregation);
  }

  /** This request with the LoRA adapter {@code name} ("" or null: the base model). */
  public SelectionRequest withLoraName(String name) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker,
        pinnedDpRank, allowedWorkers, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale,
        strictPriority, policyClass, retry, session, placement, name, disaggregation);
  }

  /** This request booked as {@code mode} says. */
  public SelectionRequest withDisaggregation(Disaggregation mode) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker,
        pinnedDpRank, allowedWorkers, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale,
        strictPriority, policyClass, retry, session, placement, loraName, mode);
  }

  /** This request as its client's {@code n}-th retry. */
  public SelectionRequest withRetry(int n) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker,
        pinnedDpRank, allowedWorkers, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale,
        strictPriority, policyClass, n, session, placement, loraName, disaggregation);
  }

  /** This request in {@code affinity}'s session (null: none). */
  public SelectionRequest withSession(SessionAffinity affinity) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker,
        pinnedDpRank, allowedWorkers, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale,
        strictPriority, policyClass, retry, affinity, placement, loraName, disaggregation);
  }

  /** This request pinned to {@code rank} (a hard session binding). */
  public SelectionRequest withPinnedRank(io.kvrouter.core.model.Rank rank) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, rank.workerId(),
        rank.dpRank(), allowedWorkers, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale,
        strictPriority, policyClass, retry, session, placement, loraName, disaggregation);
  }

  /** This request under {@code constraints} (null: none). */
  public SelectionRequest withPlacement(PlacementConstraints constraints) {
    return new SelectionRequest(model, requestId, blockHashes, islTokens, expectedOutputTokens, pinnedWorker,
        pinnedDpRank, allowedWorkers, excludedWorkers, priority, temperature, overlapCredit, prefillLoadScale,
        strictPriority, policyClass, retry, session, constraints, loraName, disaggregation);
  }
}
