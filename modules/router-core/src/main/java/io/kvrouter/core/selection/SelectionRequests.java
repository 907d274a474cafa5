package io.kvrouter.core.selection;

import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.hashing.BlockHasher;
import java.util.Collection;
import java.util.Set;

/**
 * The one mapping from a route request's fields, as any transport decoded them (gRPC's RouteRequest, the HTTP front's
 * OpenAI bodies, the endpoint picker's), to a validated {@link SelectionRequest}: the prompt's length and shape
 * checked, the prompt reduced to the sequence hashes of its full blocks (hashed from token ids, or chained from the
 * local block hashes sent, seeded by {@code cache_salt} and {@code lora_name}), and every limit of
 * {@link RequestLimits} applied. {@code strictPriority} and {@code policyClass} are the admission queue's tier and
 * class (a transport that carries none leaves them 0 and empty).
 */
public final class SelectionRequests {
  private final RequestLimits limits;

  public SelectionRequests(RequestLimits limits) {
    this.limits = limits;
  }

  public RequestLimits limits() {
    return limits;
  }

  /**
   * A route request's fields. The prompt is {@code tokenCount} token ids of {@code tokenIds}, or
   * {@code blockHashCount} local block hashes of {@code blockHashes} (one per full block, not chained: they are chained
   * in place, so the array is handed over) with {@code islTokens}; {@code islTokens} and
   * {@code expectedOutputTokens} are read as unsigned 32-bit numbers (the wire's uint32).
   */
  public record Fields(String model, String requestId, int[] tokenIds, int tokenCount, long[] blockHashes,
      int blockHashCount, int islTokens, int expectedOutputTokens, String loraName, String cacheSalt,
      String pinnedWorker, Integer pinnedDpRank, Collection<String> allowedWorkers,
      Collection<String> excludedWorkers, int priority, Double temperature, Double overlapCredit,
      Double prefillLoadScale, int strictPriority, String policyClass, Disaggregation disaggregation) {

    /** Fields of a request disaggregated as the model's workers allow ({@link Disaggregation#AUTO}). */
    public Fields(String model, String requestId, int[] tokenIds, int tokenCount, long[] blockHashes,
        int blockHashCount, int islTokens, int expectedOutputTokens, String loraName, String cacheSalt,
        String pinnedWorker, Integer pinnedDpRank, Collection<String> allowedWorkers,
        Collection<String> excludedWorkers, int priority, Double temperature, Double overlapCredit,
        Double prefillLoadScale, int strictPriority, String policyClass) {
      this(model, requestId, tokenIds, tokenCount, blockHashes, blockHashCount, islTokens, expectedOutputTokens,
          loraName, cacheSalt, pinnedWorker, pinnedDpRank, allowedWorkers, excludedWorkers, priority, temperature,
          overlapCredit, prefillLoadScale, strictPriority, policyClass, Disaggregation.AUTO);
    }

    /** Fields of a request in no strict tier and naming no admission queue class. */
    public Fields(String model, String requestId, int[] tokenIds, int tokenCount, long[] blockHashes,
        int blockHashCount, int islTokens, int expectedOutputTokens, String loraName, String cacheSalt,
        String pinnedWorker, Integer pinnedDpRank, Collection<String> allowedWorkers,
        Collection<String> excludedWorkers, int priority, Double temperature, Double overlapCredit,
        Double prefillLoadScale) {
      this(model, requestId, tokenIds, tokenCount, blockHashes, blockHashCount, islTokens, expectedOutputTokens,
          loraName, cacheSalt, pinnedWorker, pinnedDpRank, allowedWorkers, excludedWorkers, priority, temperature,
          overlapCredit, prefillLoadScale, 0, "");
    }
  }

  /**
   * A validated domain request. The prompt length is the token count when token ids are sent, else isl_tokens (then
   * required); sending both token ids and block hashes is malformed. {@code blockSize} is the model's block size in
   * the pool the request goes to (0: unknown; no sequence hashes then, and the selection will say the model is
   * unknown). The caller has checked the model name: it looked the model up by it.
   */
  public SelectionRequest toSelectionRequest(Fields in, boolean forBook, int blockSize) {
    limits.requireHashInputs(in.loraName(), in.cacheSalt());
    limits.requireAllowedWorkers(in.allowedWorkers());
    limits.requireExcludedWorkers(in.excludedWorkers());
    int tokenCount = in.tokenCount();
    if (tokenCount > 0 && in.blockHashCount() > 0) {
      throw RoutingError.invalid(RoutingError.MALFORMED, "send token_ids or block_hashes, not both").toException();
    }
    if (tokenCount > 0 && in.islTokens() != 0 && in.islTokens() != tokenCount) {
      throw RoutingError.invalid(RoutingError.MALFORMED, "isl_tokens " + Integer.toUnsignedString(in.islTokens())
          + " disagrees with the " + tokenCount + " token_ids sent").toException();
    }
    int isl = tokenCount > 0 ? tokenCount : in.islTokens();
    if (isl < 0) { // a uint32 above 2^31
      isl = Integer.MAX_VALUE;
    }
    long[] hashes = blockSize <= 0 ? null : sequenceHashes(in, isl, blockSize);
    SelectionRequest request = new SelectionRequest(
        in.model(),
        in.requestId(),
        hashes,
        isl,
        in.expectedOutputTokens() < 0 ? Integer.MAX_VALUE : in.expectedOutputTokens(),
        in.pinnedWorker(),
        in.pinnedDpRank(),
        in.allowedWorkers().isEmpty() ? Set.of() : Set.copyOf(in.allowedWorkers()),
        in.excludedWorkers().isEmpty() ? Set.of() : Set.copyOf(in.excludedWorkers()),
        in.priority(),
        in.temperature(),
        in.overlapCredit(),
        in.prefillLoadScale(),
        in.strictPriority(),
        in.policyClass(),
        0,
        in.loraName() == null ? "" : in.loraName(),
        in.disaggregation());
    limits.validate(request, forBook);
    return request;
  }

  /**
   * {@code request} in the session {@code sessionId} asks for, in {@code mode} (null: the model's); unchanged when
   * the id is empty. Every transport maps its session header or field through here.
   *
   * @throws io.kvrouter.core.error.RoutingException INVALID_ARGUMENT FIELD_TOO_LONG for an id above 256 characters
   */
  public static SelectionRequest withSession(SelectionRequest request, String sessionId, SessionMode mode) {
    if (sessionId == null || sessionId.isEmpty()) {
      return request;
    }
    RequestLimits.requireSessionId(sessionId);
    return request.withSession(SessionAffinity.of(sessionId, mode));
  }

  /**
   * {@code request} under the placement constraints a transport decoded (empty collections: none).
   *
   * @param preferredTaintMultiplier null: {@link PlacementConstraints#DEFAULT_PREFERRED_TAINT_MULTIPLIER}
   * @throws io.kvrouter.core.error.RoutingException INVALID_ARGUMENT INVALID_TAINT for a malformed taint,
   *     TOO_MANY_ITEMS for more than 32 of a kind, MALFORMED for a multiplier outside [0, 1]
   */
  public static SelectionRequest withPlacement(SelectionRequest request, Collection<String> requiredTaints,
      Collection<String> preferredTaints, Double preferredTaintMultiplier) {
    Set<String> required = io.kvrouter.core.model.Taints.parse("required_taints", requiredTaints);
    Set<String> preferred = io.kvrouter.core.model.Taints.parse("preferred_taints", preferredTaints);
    double multiplier = preferredTaintMultiplier == null
        ? PlacementConstraints.DEFAULT_PREFERRED_TAINT_MULTIPLIER : preferredTaintMultiplier;
    if (!(multiplier >= 0 && multiplier <= 1)) {
      throw RoutingError.invalid(RoutingError.MALFORMED, "preferred_taint_multiplier must be in [0, 1], got "
          + multiplier).toException();
    }
    if (required.isEmpty() && preferred.isEmpty()) {
      return request;
    }
    return request.withPlacement(new PlacementConstraints(required, preferred, multiplier));
  }

  /**
   * The session mode a transport's text names ("soft", "hard"; empty or "default": the model's).
   *
   * @throws io.kvrouter.core.error.RoutingException INVALID_ARGUMENT UNKNOWN_ENUM_VALUE for any other text
   */
  public static SessionMode sessionMode(String text) {
    SessionMode mode = SessionMode.fromWireName(text);
    if (mode == null) {
      throw RoutingError.invalid(RoutingError.UNKNOWN_ENUM_VALUE, "session mode '" + RoutingError.echo(text)
          + "' is not one of soft, hard, default").toException();
    }
    return mode;
  }

  /** The request's sequence hashes: hashed from its tokens, or chained from the local block hashes it sent. */
  private long[] sequenceHashes(Fields in, int isl, int blockSize) {
    long seed = BlockHasher.seed(in.cacheSalt(), in.loraName());
    int localCount = in.blockHashCount();
    if (localCount > 0) {
      if (localCount > isl / blockSize) {
        throw RoutingError.invalid(RoutingError.MALFORMED, localCount + " block_hashes for " + isl
            + " tokens: at most " + isl / blockSize + " full blocks of " + blockSize).toException();
      }
      long[] hashes = in.blockHashes().length == localCount ? in.blockHashes()
          : java.util.Arrays.copyOf(in.blockHashes(), localCount);
      BlockHasher.chainInPlace(hashes, localCount, seed);
      return hashes;
    }
    int count = in.tokenCount();
    if (count == 0 || count > limits.maxTokens()) {
      return null; // validation rejects an oversized prompt; don't hash it first
    }
    return BlockHasher.sequenceHashes(in.tokenIds(), count, blockSize, seed);
  }
}
