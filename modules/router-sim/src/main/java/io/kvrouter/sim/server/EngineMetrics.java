package io.kvrouter.sim.server;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The engine's /metrics under vLLM's names, types, help texts and labels (vllm/v1/metrics/loggers.py, 0.33.0
 * PrometheusStatLogger): every series carries {@code model_name} (the served name) and {@code engine} (the DP rank);
 * {@code vllm:cache_config_info} carries CacheConfig's fields as string labels plus {@code engine}, as
 * {@code log_metrics_info("cache_config", ...)} does. Histogram buckets are vLLM's (vllm/v1/metrics/buckets.py).
 * Exposed in the Prometheus text format by Prometheus's own Java client (it keeps the {@code vllm:} names).
 *
 * <p>Times are wall-clock seconds as the engine sees them (with a time scale X, X times shorter than simulated).
 */
public final class EngineMetrics {
  static final double[] TIME_TO_FIRST_TOKEN_BUCKETS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
      0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  static final double[] REQUEST_LATENCY_BUCKETS = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
      40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

  /** vLLM's FinishReason values as their label (vllm/v1/engine/__init__.py). */
  public static final String[] FINISH_REASONS = {"stop", "length", "abort", "error", "repetition"};

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final String model;
  private final Gauge running;
  private final Gauge waiting;
  private final Gauge kvCacheUsage;
  private final Counter prefixCacheQueries;
  private final Counter prefixCacheHits;
  private final Counter promptTokens;
  private final Counter generationTokens;
  private final Counter requestSuccess;
  private final Histogram timeToFirstToken;
  private final Histogram endToEnd;

  public EngineMetrics(EngineConfig config) {
    this.model = config.model();
    String[] labels = {"model_name", "engine"};
    running = Gauge.builder().name("vllm:num_requests_running")
        .help("Number of requests in model execution batches.").labelNames(labels).withoutExemplars()
        .register(registry);
    waiting = Gauge.builder().name("vllm:num_requests_waiting").help("Number of requests waiting to be processed.")
        .labelNames(labels).withoutExemplars().register(registry);
    kvCacheUsage = Gauge.builder().name("vllm:kv_cache_usage_perc").help("KV-cache usage. 1 means 100 percent usage.")
        .labelNames(labels).withoutExemplars().register(registry);
    prefixCacheQueries = Counter.builder().name("vllm:prefix_cache_queries")
        .help("Prefix cache queries, in terms of number of queried tokens.").labelNames(labels).withoutExemplars()
        .register(registry);
    prefixCacheHits = Counter.builder().name("vllm:prefix_cache_hits")
        .help("Prefix cache hits, in terms of number of cached tokens.").labelNames(labels).withoutExemplars()
        .register(registry);
    promptTokens = Counter.builder().name("vllm:prompt_tokens").help("Number of prefill tokens processed.")
        .labelNames(labels).withoutExemplars().register(registry);
    generationTokens = Counter.builder().name("vllm:generation_tokens").help("Number of generation tokens processed.")
        .labelNames(labels).withoutExemplars().register(registry);
    requestSuccess = Counter.builder().name("vllm:request_success").help("Count of successfully processed requests.")
        .labelNames("model_name", "engine", "finished_reason").withoutExemplars().register(registry);
    timeToFirstToken = Histogram.builder().name("vllm:time_to_first_token_seconds")
        .help("Histogram of time to first token in seconds.").classicOnly()
        .classicUpperBounds(TIME_TO_FIRST_TOKEN_BUCKETS).labelNames(labels).withoutExemplars().register(registry);
    endToEnd = Histogram.builder().name("vllm:e2e_request_latency_seconds")
        .help("Histogram of e2e request latency in seconds.").classicOnly()
        .classicUpperBounds(REQUEST_LATENCY_BUCKETS).labelNames(labels).withoutExemplars().register(registry);

    Map<String, String> cacheConfig = cacheConfigLabels(config);
    Info cacheInfo = Info.builder().name("vllm:cache_config_info").help("Information of the LLMEngine CacheConfig")
        .labelNames(cacheConfig.keySet().toArray(String[]::new)).register(registry);
    for (int rank = 0; rank < config.dpSize(); rank++) {
      String engine = Integer.toString(rank);
      cacheConfig.put("engine", engine);
      cacheInfo.addLabelValues(cacheConfig.values().toArray(String[]::new));
      // every series exists from the start, at zero, as vLLM creates them per engine at startup
      running.labelValues(model, engine).set(0);
      waiting.labelValues(model, engine).set(0);
      kvCacheUsage.labelValues(model, engine).set(0);
      prefixCacheQueries.labelValues(model, engine);
      prefixCacheHits.labelValues(model, engine);
      promptTokens.labelValues(model, engine);
      generationTokens.labelValues(model, engine);
      for (String reason : FINISH_REASONS) {
        requestSuccess.labelValues(model, engine, reason);
      }
      timeToFirstToken.labelValues(model, engine);
      endToEnd.labelValues(model, engine);
    }
  }

  /**
   * CacheConfig's fields in declaration order (vllm/config/cache.py, 0.33.0) with {@code str(value)} as Python prints
   * it, then {@code engine}. Fields the simulation has no notion of keep vLLM's defaults.
   */
  static Map<String, String> cacheConfigLabels(EngineConfig config) {
    long tokens = (long) config.kvBlocks() * config.blockSize();
    Map<String, String> labels = new LinkedHashMap<>();
    labels.put("block_size", Integer.toString(config.blockSize()));
    labels.put("user_specified_block_size", "True");
    labels.put("kv_cache_layout", "None");
    labels.put("prefix_match_unit", "None");
    labels.put("gpu_memory_utilization", "0.92");
    labels.put("cache_dtype", "auto");
    labels.put("is_attention_free", "False");
    labels.put("num_gpu_blocks_override", "None");
    labels.put("sliding_window", "None");
    labels.put("enable_prefix_caching", "True");
    labels.put("prefix_caching_hash_algo", "sha256");
    labels.put("prefix_cache_retention_interval", "0");
    labels.put("kv_cache_dtype_skip_layers", "[]");
    labels.put("mamba_page_size_padded", "None");
    labels.put("skip_page_size_padded", "None");
    labels.put("mamba_block_size", "None");
    labels.put("mamba_cache_dtype", "auto");
    labels.put("mamba_ssm_cache_dtype", "auto");
    labels.put("mamba_cache_mode", "none");
    labels.put("enable_mamba_shared_prefix_checkpoint", "False");
    labels.put("replayssm_buffer_len", "16");
    labels.put("use_replayssm", "False");
    labels.put("use_kda_recoverssm", "False");
    labels.put("num_gpu_blocks", Integer.toString(config.kvBlocks()));
    labels.put("num_cpu_blocks", "None");
    labels.put("simple_cpu_offload_num_blocks", "None");
    labels.put("effective_attention_block_size", Integer.toString(config.blockSize()));
    labels.put("kv_cache_size_tokens", Long.toString(tokens));
    labels.put("kv_cache_max_concurrency", pythonFloat((double) tokens / config.maxModelLen()));
    labels.put("hash_block_size", Integer.toString(config.blockSize()));
    labels.put("cache_hit_alignment_tokens", "None");
    labels.put("kv_sharing_fast_prefill", "False");
    labels.put("swa_bounded_replay", "True");
    labels.put("kv_cache_memory_bytes", "None");
    labels.put("kv_offloading_size", "None");
    labels.put("kv_offloading_backend", "native");
    labels.put("engine", "");
    return labels;
  }

  private static String pythonFloat(double value) {
    String text = String.format(Locale.ROOT, "%.12g", value).replaceAll("0+$", "");
    return text.endsWith(".") ? text + "0" : text;
  }

  /** One rank's scheduler state after a step. */
  public void scheduler(int rank, int runningRequests, int waitingRequests, double kvUsage) {
    String engine = Integer.toString(rank);
    running.labelValues(model, engine).set(runningRequests);
    waiting.labelValues(model, engine).set(waitingRequests);
    kvCacheUsage.labelValues(model, engine).set(kvUsage);
  }

  /** A request was scheduled: its prompt tokens were looked up, {@code hitTokens} found cached. */
  public void prefixCacheLookup(int rank, long queriedTokens, long hitTokens) {
    String engine = Integer.toString(rank);
    prefixCacheQueries.labelValues(model, engine).inc(queriedTokens);
    prefixCacheHits.labelValues(model, engine).inc(hitTokens);
  }

  /** A request's first token: its whole prompt was prefilled (cached tokens included, as vLLM counts them). */
  public void firstToken(int rank, long promptLength, double secondsSinceArrival) {
    String engine = Integer.toString(rank);
    promptTokens.labelValues(model, engine).inc(promptLength);
    timeToFirstToken.labelValues(model, engine).observe(secondsSinceArrival);
  }

  public void generated(int rank, long tokens) {
    generationTokens.labelValues(model, Integer.toString(rank)).inc(tokens);
  }

  /** A request left the engine: finished ({@code stop}, {@code length}, with its latency) or aborted. */
  public void finished(int rank, String reason, double secondsSinceArrival) {
    String engine = Integer.toString(rank);
    requestSuccess.labelValues(model, engine, reason).inc();
    if (!"abort".equals(reason)) {
      endToEnd.labelValues(model, engine).observe(secondsSinceArrival);
    }
  }

  /** The text exposition (format 0.0.4), as prometheus_client serves it for vLLM. */
  public byte[] scrape() {
    ByteArrayOutputStream out = new ByteArrayOutputStream(16 * 1024);
    try {
      PrometheusTextFormatWriter.create().write(out, registry.scrape());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }
}
