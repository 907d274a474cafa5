package io.kvrouter.core.selection;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.model.WorkerConfig;
import java.util.Collection;
import java.util.Map;

/**
 * Every limit of the contract, checked here and nowhere else, before a request reaches any state. The counts an
 * operator may need to raise are fields (configured under {@code kvrouter.limits}); the rest are constants. Each
 * rejection is INVALID_ARGUMENT with a reason naming the kind of limit, and no message echoes more than
 * {@link RoutingError#echo} allows. The proto files and the root README list the same figures.
 *
 * @param maxTokens the largest prompt (isl_tokens, or token_ids sent)
 * @param maxOutputTokens the largest expected_output_tokens
 * @param maxRanksPerWorker the largest dp_size (each rank has a load cell on every node)
 * @param maxAllowedWorkers the most entries in allowed_workers
 */
public record RequestLimits(int maxTokens, int maxOutputTokens, int maxRanksPerWorker, int maxAllowedWorkers) {
  public static final int DEFAULT_MAX_TOKENS = 131_072;
  public static final int DEFAULT_MAX_OUTPUT_TOKENS = 1_048_576;
  public static final int DEFAULT_MAX_RANKS_PER_WORKER = 1_024;
  public static final int DEFAULT_MAX_ALLOWED_WORKERS = 1_024;

  /** Ceiling of every configurable count, so sums and block arithmetic over them stay far from int overflow. */
  public static final int MAX_CONFIGURABLE = 1 << 24;
  /** Ranks lie in [0, MAX_DP_RANK_END): dp_start + dp_size may not exceed it. */
  public static final int MAX_DP_RANK_END = 1 << 16;
  public static final int MAX_BLOCK_SIZE = 1 << 16;
  public static final int MAX_KV_BLOCKS = 1 << 30;
  public static final int MAX_BATCHED_TOKENS = 1 << 30;
  /** model, worker_id, request_id, pinned_worker and each allowed_workers entry, lora_name, cache_salt, region. */
  public static final int MAX_ID_LENGTH = 256;
  /** LoRA adapters one worker may declare loaded. */
  public static final int MAX_LORA_ADAPTERS = 1024;
  public static final int MAX_ENDPOINT_LENGTH = 1_024;
  public static final int MAX_POLICY_NAME_LENGTH = 64;
  public static final int MAX_POLICY_PARAMETERS = 32;
  public static final int MAX_POLICY_KEY_LENGTH = 64;
  public static final int MAX_POLICY_VALUE_LENGTH = 256;
  public static final int MAX_RANKS_PER_LOAD_REPORT = MAX_DP_RANK_END;
  /** The largest priority jump (seconds of head start in FCFS); a negative one counts as 0. */
  public static final int MAX_PRIORITY = 1_000_000;
  /** Strict-priority tiers are 0 to this. */
  public static final int MAX_STRICT_PRIORITY = 65_535;
  /** A request's policy_class (a class or family name). */
  public static final int MAX_POLICY_CLASS_LENGTH = 64;
  /**
   * A KV event batch is fanned out to the region's nodes in one remoting message, which must fit one Artery frame
   * (256 KiB): at most this many events, and this many block hashes over all its events (two longs per stored block).
   */
  public static final int MAX_KV_EVENTS_PER_BATCH = 512;
  public static final int MAX_KV_BLOCKS_PER_BATCH = 8_192;

  public RequestLimits {
    requireConfigurable("max-tokens", maxTokens);
    requireConfigurable("max-output-tokens", maxOutputTokens);
    requireConfigurable("max-ranks-per-worker", maxRanksPerWorker);
    requireConfigurable("max-allowed-workers", maxAllowedWorkers);
    if (maxRanksPerWorker > MAX_DP_RANK_END) {
      throw new IllegalArgumentException("max-ranks-per-worker may not exceed " + MAX_DP_RANK_END);
    }
  }

  /** The defaults, with {@code maxTokens} as the prompt limit. */
  public RequestLimits(int maxTokens) {
    this(maxTokens, DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_MAX_RANKS_PER_WORKER, DEFAULT_MAX_ALLOWED_WORKERS);
  }

  public static RequestLimits defaults() {
    return new RequestLimits(DEFAULT_MAX_TOKENS);
  }

  private static void requireConfigurable(String key, int value) {
    if (value <= 0 || value > MAX_CONFIGURABLE) {
      throw new IllegalArgumentException("kvrouter.limits." + key + " must be in [1, " + MAX_CONFIGURABLE + "], got "
          + value);
    }
  }

  /** Rejects a malformed request with INVALID_ARGUMENT; {@code forBook} also requires a request id. */
  public void validate(SelectionRequest request, boolean forBook) {
    requireModel(request.model());
    if (forBook) {
      requireId("request_id", request.requestId(), RoutingError.EMPTY_REQUEST_ID);
    } else {
      requireLength("request_id", request.requestId(), MAX_ID_LENGTH);
    }
    if (request.islTokens() <= 0) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE,
          "the prompt is empty: send token_ids, or block_hashes with isl_tokens > 0").toException();
    }
    if (request.islTokens() > maxTokens) {
      throw RoutingError.invalid(RoutingError.TOO_MANY_TOKENS,
          "prompt of " + request.islTokens() + " tokens exceeds the limit of " + maxTokens).toException();
    }
    if (request.expectedOutputTokens() < 0 || request.expectedOutputTokens() > maxOutputTokens) {
      throw RoutingError.invalid(RoutingError.TOO_MANY_TOKENS, "expected_output_tokens must be in [0, "
          + maxOutputTokens + "], got " + Integer.toUnsignedString(request.expectedOutputTokens())).toException();
    }
    if (request.pinnedDpRank() != null && (request.pinnedDpRank() < 0 || request.pinnedDpRank() >= MAX_DP_RANK_END)) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, "pinned_dp_rank must be in [0, " + MAX_DP_RANK_END
          + "), got " + Integer.toUnsignedString(request.pinnedDpRank())).toException();
    }
    requireLength("pinned_worker", request.pinnedWorker(), MAX_ID_LENGTH);
    requireAllowedWorkers(request.allowedWorkers());
    requireExcludedWorkers(request.excludedWorkers());
    if (request.priority() > MAX_PRIORITY) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, "priority must be at most " + MAX_PRIORITY
          + " (a negative one counts as 0), got " + request.priority()).toException();
    }
    if (request.strictPriority() < 0 || request.strictPriority() > MAX_STRICT_PRIORITY) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, "strict_priority must be in [0, " + MAX_STRICT_PRIORITY
          + "], got " + Integer.toUnsignedString(request.strictPriority())).toException();
    }
    requireLength("policy_class", request.policyClass(), MAX_POLICY_CLASS_LENGTH);
    checkOverride("temperature", request.temperature());
    checkOverride("overlap_credit", request.overlapCredit());
    checkOverride("prefill_load_scale", request.prefillLoadScale());
  }

  /** The lengths of the strings a route request carries only to hash (they never reach a SelectionRequest). */
  public void requireHashInputs(String loraName, String cacheSalt) {
    requireLength("lora_name", loraName, MAX_ID_LENGTH);
    requireLength("cache_salt", cacheSalt, MAX_ID_LENGTH);
  }

  /** The allowed_workers count is checked before the list is copied into a set. */
  public void requireAllowedWorkers(Collection<String> allowed) {
    requireCount("allowed_workers", allowed.size(), maxAllowedWorkers);
    for (String worker : allowed) {
      requireLength("allowed_workers entry", worker, MAX_ID_LENGTH);
    }
  }

  /** excluded_workers: as many entries as allowed_workers may have, each as long. */
  public void requireExcludedWorkers(Collection<String> excluded) {
    requireCount("excluded_workers", excluded.size(), maxAllowedWorkers);
    for (String worker : excluded) {
      requireLength("excluded_workers entry", worker, MAX_ID_LENGTH);
    }
  }

  /**
   * Rejects a worker configuration that cannot be routed to, or that would cost more than the limits allow: the
   * configured rank limit on top of {@link #requireWorkerShape}.
   */
  public void validate(WorkerConfig config) {
    requireWorkerShape(config);
    if (config.dpSize() > maxRanksPerWorker) {
      throw RoutingError.invalid(RoutingError.TOO_MANY_RANKS, "dp_size " + config.dpSize()
          + " exceeds the limit of " + maxRanksPerWorker + " ranks per worker").toException();
    }
  }

  /**
   * The fixed limits of a worker configuration, which keep its rank range and block arithmetic from overflowing;
   * the admission state checks these again on every registration it applies.
   */
  public static void requireWorkerShape(WorkerConfig config) {
    requireWorkerId(config.workerId());
    if (config.blockSize() <= 0 || config.blockSize() > MAX_BLOCK_SIZE) {
      throw RoutingError.invalid(RoutingError.INVALID_BLOCK_SIZE, "block_size must be in [1, " + MAX_BLOCK_SIZE
          + "], got " + Integer.toUnsignedString(config.blockSize())).toException();
    }
    requireSize("max_num_batched_tokens", config.maxNumBatchedTokens(), MAX_BATCHED_TOKENS);
    requireSize("total_kv_blocks", config.totalKvBlocks(), MAX_KV_BLOCKS);
    requireSize("dp_size", config.dpSize(), Integer.MAX_VALUE);
    long end = (config.dpStart() & 0xffffffffL) + config.dpSize();
    if (end > MAX_DP_RANK_END) {
      throw RoutingError.invalid(RoutingError.TOO_MANY_RANKS, "ranks [dp_start, dp_start + dp_size) = ["
          + Integer.toUnsignedString(config.dpStart()) + ", " + end + ") must lie below " + MAX_DP_RANK_END)
          .toException();
    }
    requireLength("endpoint", config.endpoint(), MAX_ENDPOINT_LENGTH);
    requireLength("region", config.region(), MAX_ID_LENGTH);
    requireLoraAdapters(config.loraAdapters());
  }

  /** A list of LoRA adapter names (a registration's or a load report's): at most 1,024, each 1 to 256 characters. */
  public static void requireLoraAdapters(java.util.Collection<String> adapters) {
    requireCount("lora_adapters", adapters.size(), MAX_LORA_ADAPTERS);
    for (String adapter : adapters) {
      if (adapter.isEmpty()) {
        throw RoutingError.invalid(RoutingError.MALFORMED, "a lora_adapters entry is empty").toException();
      }
      requireLength("lora_adapters entry", adapter, MAX_ID_LENGTH);
    }
  }

  /** A LoadReport: its worker id and how many rank reports it carries. */
  public void validateLoadReport(String model, String workerId, int ranks) {
    requireModel(model);
    requireWorkerId(workerId);
    requireCount("ranks", ranks, MAX_RANKS_PER_LOAD_REPORT);
  }

  /** A KV event batch: it must fit one remoting frame when fanned out (see {@link #MAX_KV_BLOCKS_PER_BATCH}). */
  public void validateKvBatch(String model, String workerId, int dpRank, int events, long blocks) {
    requireModel(model);
    requireWorkerId(workerId);
    if (dpRank < 0 || dpRank >= MAX_DP_RANK_END) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, "dp_rank must be in [0, " + MAX_DP_RANK_END + "), got "
          + Integer.toUnsignedString(dpRank)).toException();
    }
    requireCount("events", events, MAX_KV_EVENTS_PER_BATCH);
    requireCount("block hashes (over all events)", blocks, MAX_KV_BLOCKS_PER_BATCH);
  }

  /** SetPolicy: the policy name and the parameters' count and sizes. Which names and values are valid is policy's. */
  public void validatePolicy(String model, String policy, Map<String, String> parameters) {
    requireModel(model);
    requireLength("policy", policy, MAX_POLICY_NAME_LENGTH);
    requireCount("parameters", parameters.size(), MAX_POLICY_PARAMETERS);
    for (Map.Entry<String, String> parameter : parameters.entrySet()) {
      requireLength("parameter name", parameter.getKey(), MAX_POLICY_KEY_LENGTH);
      requireLength("parameter value", parameter.getValue(), MAX_POLICY_VALUE_LENGTH);
    }
  }

  /** Rejects an empty model name (EMPTY_MODEL) or one over {@link #MAX_ID_LENGTH}: every call naming a model checks. */
  public static void requireModel(String model) {
    if (model == null || model.isBlank()) {
      throw RoutingError.emptyModel().toException();
    }
    requireLength("model", model, MAX_ID_LENGTH);
  }

  /** Rejects an empty worker id (EMPTY_WORKER_ID) or one too long: Register, Deregister and load reports alike. */
  public static void requireWorkerId(String workerId) {
    requireId("worker_id", workerId, RoutingError.EMPTY_WORKER_ID);
  }

  /** Rejects an empty request id (EMPTY_REQUEST_ID) or one too long. */
  public static void requireRequestId(String requestId) {
    requireId("request_id", requestId, RoutingError.EMPTY_REQUEST_ID);
  }

  /** A session id (empty: no session) is at most {@link #MAX_ID_LENGTH} characters. */
  public static void requireSessionId(String sessionId) {
    requireLength("session_id", sessionId, MAX_ID_LENGTH);
  }

  /** A region named by a call (empty: the node's own) is at most {@link #MAX_ID_LENGTH} characters. */
  public static void requireRegion(String region) {
    requireLength("region", region, MAX_ID_LENGTH);
  }

  private static void requireId(String field, String value, String emptyReason) {
    if (value == null || value.isBlank()) {
      throw RoutingError.invalid(emptyReason, field + " must not be empty").toException();
    }
    requireLength(field, value, MAX_ID_LENGTH);
  }

  private static void requireLength(String field, String value, int max) {
    if (value != null && value.length() > max) {
      throw RoutingError.invalid(RoutingError.FIELD_TOO_LONG, field + " of " + value.length()
          + " characters exceeds the limit of " + max + ": " + RoutingError.echo(value)).toException();
    }
  }

  private static void requireCount(String field, long count, int max) {
    if (count > max) {
      throw RoutingError.invalid(RoutingError.TOO_MANY_ITEMS, count + " " + field + " exceed the limit of " + max)
          .toException();
    }
  }

  private static void requireSize(String field, int value, int max) {
    if (value <= 0 || value > max) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, field + " must be in [1, " + max + "], got "
          + Integer.toUnsignedString(value)).toException();
    }
  }

  private static void checkOverride(String name, Double value) {
    if (value != null && !(value >= 0 && !value.isInfinite())) {
      throw RoutingError.invalid(RoutingError.MALFORMED, name + " override must be a finite number >= 0, got " + value)
          .toException();
    }
  }
}
