package io.kvrouter.engines.config;

import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.RequestLimits;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * One engine as an engines file entry (or a Kubernetes pod) describes it; the keys of the file map 1:1 onto the
 * components. Optional values are null when not given; {@link #of} fills the documented defaults.
 *
 * @param kvEvents ZMQ PUB endpoint of rank 0 ({@code tcp://host:port}; rank r: port + r), or null: no KV events (the
 *     index of this worker stays approximate)
 * @param kvEventsReplay ZMQ ROUTER replay endpoint of rank 0 (rank r: port + r), or null: gaps cannot be replayed
 * @param kvEventsTopic the topic frame to accept, or null: every topic
 * @param blockSize the engine's block (page) size, or null: from its metrics (vLLM's cache_config_info)
 * @param totalKvBlocks KV blocks per rank, or null: from its metrics
 * @param role the role the engine registers with (aggregated, or one half of a prefill/decode pair)
 */
public record EngineSpec(
    String model,
    String workerId,
    EngineKind kind,
    String baseUrl,
    String metricsUrl,
    String kvEvents,
    String kvEventsReplay,
    String kvEventsTopic,
    int dpSize,
    Integer blockSize,
    Integer totalKvBlocks,
    int maxNumBatchedTokens,
    WorkerRole role) {

  public static final int DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192;

  public EngineSpec {
    role = role == null ? WorkerRole.AGGREGATED : role;
  }

  /** An aggregated engine. */
  public EngineSpec(String model, String workerId, EngineKind kind, String baseUrl, String metricsUrl,
      String kvEvents, String kvEventsReplay, String kvEventsTopic, int dpSize, Integer blockSize,
      Integer totalKvBlocks, int maxNumBatchedTokens) {
    this(model, workerId, kind, baseUrl, metricsUrl, kvEvents, kvEventsReplay, kvEventsTopic, dpSize, blockSize,
        totalKvBlocks, maxNumBatchedTokens, WorkerRole.AGGREGATED);
  }

  /** An aggregated engine's spec with defaults applied ({@link #of(String, String, EngineKind, String, String,
   * String, String, String, Integer, Integer, Integer, Integer, WorkerRole)}). */
  public static EngineSpec of(String model, String workerId, EngineKind kind, String baseUrl, String metricsUrl,
      String kvEvents, String kvEventsReplay, String kvEventsTopic, Integer dpSize, Integer blockSize,
      Integer totalKvBlocks, Integer maxNumBatchedTokens) {
    return of(model, workerId, kind, baseUrl, metricsUrl, kvEvents, kvEventsReplay, kvEventsTopic, dpSize, blockSize,
        totalKvBlocks, maxNumBatchedTokens, WorkerRole.AGGREGATED);
  }

  /**
   * The spec with defaults applied: metrics_url = base_url + /metrics, dp_size 1, max_num_batched_tokens 8192, role
   * aggregated.
   */
  public static EngineSpec of(String model, String workerId, EngineKind kind, String baseUrl, String metricsUrl,
      String kvEvents, String kvEventsReplay, String kvEventsTopic, Integer dpSize, Integer blockSize,
      Integer totalKvBlocks, Integer maxNumBatchedTokens, WorkerRole role) {
    String base = blank(baseUrl) ? null : stripSlash(baseUrl.trim());
    String metrics = blank(metricsUrl) ? (base == null ? null : base + "/metrics") : metricsUrl.trim();
    return new EngineSpec(model, workerId, kind, base, metrics, emptyToNull(kvEvents), emptyToNull(kvEventsReplay),
        emptyToNull(kvEventsTopic), dpSize == null ? 1 : dpSize, blockSize, totalKvBlocks,
        maxNumBatchedTokens == null ? DEFAULT_MAX_NUM_BATCHED_TOKENS : maxNumBatchedTokens, role);
  }

  public EngineKey key() {
    return new EngineKey(model, workerId);
  }

  /** What is wrong with this spec (empty when it can run); each problem names its key. */
  public List<String> problems() {
    List<String> problems = new ArrayList<>();
    check(problems, "model", () -> RequestLimits.requireModel(model == null ? "" : model));
    check(problems, "worker_id", () -> RequestLimits.requireWorkerId(workerId == null ? "" : workerId));
    if (kind == null) {
      problems.add("kind: must be vllm or sglang");
    }
    if (!isHttpUrl(baseUrl)) {
      problems.add("base_url: must be an http:// or https:// URL with a host");
    } else if (baseUrl.length() > RequestLimits.MAX_ENDPOINT_LENGTH) {
      problems.add("base_url: longer than " + RequestLimits.MAX_ENDPOINT_LENGTH + " characters");
    }
    if (!isHttpUrl(metricsUrl)) {
      problems.add("metrics_url: must be an http:// or https:// URL with a host");
    }
    if (kvEvents != null && TcpEndpoint.parse(kvEvents) == null) {
      problems.add("kv_events: must be tcp://host:port");
    }
    if (kvEventsReplay != null && TcpEndpoint.parse(kvEventsReplay) == null) {
      problems.add("kv_events_replay: must be tcp://host:port");
    }
    if (kvEventsReplay != null && kvEvents == null) {
      problems.add("kv_events_replay: given without kv_events");
    }
    if (dpSize < 1 || dpSize > RequestLimits.DEFAULT_MAX_RANKS_PER_WORKER) {
      problems.add("dp_size: must be 1 to " + RequestLimits.DEFAULT_MAX_RANKS_PER_WORKER);
    } else {
      for (String endpoint : new String[] {kvEvents, kvEventsReplay}) {
        TcpEndpoint parsed = endpoint == null ? null : TcpEndpoint.parse(endpoint);
        if (parsed != null && parsed.port() + dpSize - 1 > 65535) {
          problems.add("dp_size: rank " + (dpSize - 1) + "'s port of " + endpoint + " would be above 65535");
        }
      }
    }
    if (blockSize != null && (blockSize < 1 || blockSize > RequestLimits.MAX_BLOCK_SIZE)) {
      problems.add("block_size: must be 1 to " + RequestLimits.MAX_BLOCK_SIZE);
    }
    if (totalKvBlocks != null && (totalKvBlocks < 1 || totalKvBlocks > RequestLimits.MAX_KV_BLOCKS)) {
      problems.add("total_kv_blocks: must be 1 to " + RequestLimits.MAX_KV_BLOCKS);
    }
    if (maxNumBatchedTokens < 1 || maxNumBatchedTokens > RequestLimits.MAX_BATCHED_TOKENS) {
      problems.add("max_num_batched_tokens: must be 1 to " + RequestLimits.MAX_BATCHED_TOKENS);
    }
    return problems;
  }

  private static void check(List<String> problems, String key, Runnable check) {
    try {
      check.run();
    } catch (RuntimeException e) {
      problems.add(key + ": " + e.getMessage());
    }
  }

  private static boolean isHttpUrl(String url) {
    if (blank(url)) {
      return false;
    }
    try {
      URI uri = URI.create(url);
      return ("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) && uri.getHost() != null;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static boolean blank(String value) {
    return value == null || value.isBlank();
  }

  private static String emptyToNull(String value) {
    return blank(value) ? null : value.trim();
  }

  private static String stripSlash(String url) {
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }
}
