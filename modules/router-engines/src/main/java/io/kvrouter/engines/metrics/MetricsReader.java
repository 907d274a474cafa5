package io.kvrouter.engines.metrics;

import io.kvrouter.engines.config.EngineKind;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Reads an engine's {@code /metrics} page, by kind:
 *
 * <ul>
 *   <li>vLLM ({@code vllm/v1/metrics/loggers.py}): {@code vllm:num_requests_running}, {@code vllm:num_requests_waiting},
 *       {@code vllm:kv_cache_usage_perc} (older: {@code vllm:gpu_cache_usage_perc}), {@code vllm:cache_config_info}
 *       (every CacheConfig field as a label: {@code block_size}, {@code num_gpu_blocks}), the prefix-cache counters
 *       {@code vllm:prefix_cache_queries_total} / {@code vllm:prefix_cache_hits_total} (older:
 *       {@code vllm:gpu_prefix_cache_*}), {@code vllm:lora_requests_info} (its value the time of the update, of
 *       several series the latest; the adapters of its comma-separated {@code running_lora_adapters} and
 *       {@code waiting_lora_adapters} labels are the ones the rank serves); the {@code engine} label is the DP
 *       rank.</li>
 *   <li>SGLang ({@code python/sglang/srt/metrics/collector.py}, served with {@code --enable-metrics}):
 *       {@code sglang:num_running_reqs}, {@code sglang:num_queue_reqs}, {@code sglang:token_usage},
 *       {@code sglang:max_total_num_tokens} (tokens: divided by the page size for blocks),
 *       {@code sglang:prompt_tokens_total}, {@code sglang:cached_tokens_total}; the {@code dp_rank} label (absent:
 *       rank 0) is the rank, and of several TP ranks the lowest.</li>
 * </ul>
 */
public final class MetricsReader {
  private static final String V_RUNNING = "vllm:num_requests_running";
  private static final String V_WAITING = "vllm:num_requests_waiting";
  private static final String V_USAGE = "vllm:kv_cache_usage_perc";
  private static final String V_USAGE_OLD = "vllm:gpu_cache_usage_perc";
  private static final String V_CACHE_CONFIG = "vllm:cache_config_info";
  private static final String V_QUERIES = "vllm:prefix_cache_queries_total";
  private static final String V_HITS = "vllm:prefix_cache_hits_total";
  private static final String V_QUERIES_OLD = "vllm:gpu_prefix_cache_queries_total";
  private static final String V_HITS_OLD = "vllm:gpu_prefix_cache_hits_total";
  private static final String V_LORA = "vllm:lora_requests_info";
  /** The key of a LoRA series that names no engine. */
  private static final int ALL_RANKS = -1;
  private static final Set<String> VLLM = Set.of(V_RUNNING, V_WAITING, V_USAGE, V_USAGE_OLD, V_CACHE_CONFIG,
      V_QUERIES, V_HITS, V_QUERIES_OLD, V_HITS_OLD, V_LORA);

  private static final String S_RUNNING = "sglang:num_running_reqs";
  private static final String S_WAITING = "sglang:num_queue_reqs";
  private static final String S_USAGE = "sglang:token_usage";
  private static final String S_MAX_TOKENS = "sglang:max_total_num_tokens";
  private static final String S_PROMPT = "sglang:prompt_tokens_total";
  private static final String S_CACHED = "sglang:cached_tokens_total";
  private static final Set<String> SGLANG = Set.of(S_RUNNING, S_WAITING, S_USAGE, S_MAX_TOKENS, S_PROMPT, S_CACHED);

  private MetricsReader() {}

  /**
   * @param pageSize SGLang's page size (its block size, from the engines file; null: 1); unused for vLLM
   */
  public static EngineMetrics read(EngineKind kind, String page, Integer pageSize)
      throws PrometheusText.MalformedPageException {
    return kind == EngineKind.VLLM ? vllm(page) : sglang(page, pageSize == null ? 1 : pageSize);
  }

  private static final class Ranks {
    final TreeMap<Integer, double[]> byRank = new TreeMap<>();
    final TreeMap<Integer, Integer> tpOf = new TreeMap<>();
    /** Per rank: the latest LoRA series' time (its value) and adapters. */
    final TreeMap<Integer, Double> loraAt = new TreeMap<>();
    final TreeMap<Integer, Set<String>> lora = new TreeMap<>();

    /** [running, waiting, usage, queries, hits, usage-from-old-name, queries-old, hits-old] */
    double[] of(int rank) {
      return byRank.computeIfAbsent(rank, r -> new double[] {Double.NaN, Double.NaN, Double.NaN, Double.NaN,
          Double.NaN, Double.NaN, Double.NaN, Double.NaN});
    }

    List<EngineMetrics.RankMetrics> metrics() {
      return byRank.entrySet().stream().map(e -> {
        double[] v = e.getValue();
        double usage = Double.isNaN(v[2]) ? v[5] : v[2];
        double queries = Double.isNaN(v[3]) ? v[6] : v[3];
        double hits = Double.isNaN(v[4]) ? v[7] : v[4];
        Set<String> adapters = lora.containsKey(e.getKey()) ? lora.get(e.getKey()) : lora.get(ALL_RANKS);
        return new EngineMetrics.RankMetrics(e.getKey(), v[0], v[1], usage, queries, hits, adapters);
      }).toList();
    }
  }

  private static EngineMetrics vllm(String page) throws PrometheusText.MalformedPageException {
    Ranks ranks = new Ranks();
    Integer blockSize = null;
    Integer totalKvBlocks = null;
    int configRank = Integer.MAX_VALUE;
    for (PrometheusText.Sample s : PrometheusText.parse(page, VLLM)) {
      int rank = rankLabel(s.labels(), "engine");
      if (rank < 0) {
        continue;
      }
      if (s.name().equals(V_CACHE_CONFIG)) {
        // one series per engine (DP rank), equal across ranks; the lowest rank's is read
        if (rank < configRank) {
          configRank = rank;
          blockSize = positiveInt(s.labels().get("block_size"));
          totalKvBlocks = positiveInt(s.labels().get("num_gpu_blocks"));
        }
        continue;
      }
      if (s.name().equals(V_LORA)) {
        // vLLM's gauge has no engine label (its LoRA metrics are per server): it then holds for every rank
        rank = s.labels().containsKey("engine") ? rank : ALL_RANKS;
        Double seen = ranks.loraAt.get(rank);
        if (seen == null || s.value() > seen) {
          ranks.loraAt.put(rank, s.value());
          Set<String> adapters = new java.util.TreeSet<>(names(s.labels().get("running_lora_adapters")));
          adapters.addAll(names(s.labels().get("waiting_lora_adapters")));
          ranks.lora.put(rank, adapters);
        }
        continue;
      }
      double[] v = ranks.of(rank);
      switch (s.name()) {
        case V_RUNNING -> v[0] = s.value();
        case V_WAITING -> v[1] = s.value();
        case V_USAGE -> v[2] = s.value();
        case V_QUERIES -> v[3] = s.value();
        case V_HITS -> v[4] = s.value();
        case V_USAGE_OLD -> v[5] = s.value();
        case V_QUERIES_OLD -> v[6] = s.value();
        case V_HITS_OLD -> v[7] = s.value();
        default -> { }
      }
    }
    return new EngineMetrics(blockSize, totalKvBlocks, ranks.metrics());
  }

  private static EngineMetrics sglang(String page, int pageSize) throws PrometheusText.MalformedPageException {
    Ranks ranks = new Ranks();
    Double maxTokens = null;
    for (PrometheusText.Sample s : PrometheusText.parse(page, SGLANG)) {
      int rank = rankLabel(s.labels(), "dp_rank");
      int tp = rankLabel(s.labels(), "tp_rank");
      if (rank < 0 || tp < 0) {
        continue;
      }
      // several TP ranks of one DP rank report the same scheduler figures: keep the lowest TP rank's
      Integer seenTp = ranks.tpOf.get(rank);
      if (seenTp != null && tp > seenTp) {
        continue;
      }
      if (seenTp == null || tp < seenTp) {
        ranks.tpOf.put(rank, tp);
        ranks.byRank.remove(rank);
      }
      double[] v = ranks.of(rank);
      switch (s.name()) {
        case S_RUNNING -> v[0] = s.value();
        case S_WAITING -> v[1] = s.value();
        case S_USAGE -> v[2] = s.value();
        case S_PROMPT -> v[3] = s.value();
        case S_CACHED -> v[4] = s.value();
        case S_MAX_TOKENS -> {
          if (rank == 0 || maxTokens == null) {
            maxTokens = s.value();
          }
        }
        default -> { }
      }
    }
    Integer totalKvBlocks = maxTokens == null || !(maxTokens >= pageSize) ? null
        : (int) Math.min(Integer.MAX_VALUE, (long) (maxTokens / pageSize));
    return new EngineMetrics(null, totalKvBlocks, ranks.metrics());
  }

  /** The names of a comma-separated label value, trimmed, empty ones dropped. */
  private static List<String> names(String value) {
    if (value == null || value.isBlank()) {
      return List.of();
    }
    List<String> out = new java.util.ArrayList<>();
    for (String part : value.split(",")) {
      String name = part.trim();
      if (!name.isEmpty() && name.length() <= io.kvrouter.core.selection.RequestLimits.MAX_ID_LENGTH
          && out.size() < io.kvrouter.core.selection.RequestLimits.MAX_LORA_ADAPTERS) {
        out.add(name);
      }
    }
    return out;
  }

  /** The label as a rank: absent is 0, not a number is -1 (the sample is ignored). */
  private static int rankLabel(Map<String, String> labels, String name) {
    String value = labels.get(name);
    if (value == null || value.isEmpty()) {
      return 0;
    }
    try {
      int rank = Integer.parseInt(value);
      return rank < 0 ? -1 : rank;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static Integer positiveInt(String value) {
    if (value == null) {
      return null;
    }
    try {
      int parsed = Integer.parseInt(value.trim());
      return parsed > 0 ? parsed : null;
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
