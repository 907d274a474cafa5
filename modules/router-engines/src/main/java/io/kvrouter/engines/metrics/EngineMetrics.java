package io.kvrouter.engines.metrics;

import io.kvrouter.core.membership.RankReport;
import java.util.ArrayList;
import java.util.List;

/**
 * What one scrape of an engine's {@code /metrics} says: its capacity (when the page carries it) and each DP rank's
 * load.
 *
 * @param blockSize the engine's block size, or null when the page does not say (SGLang: from the engines file)
 * @param totalKvBlocks KV blocks per rank, or null when the page does not say (vLLM before its cache is profiled)
 */
public record EngineMetrics(Integer blockSize, Integer totalKvBlocks, List<RankMetrics> ranks) {

  /**
   * One rank's figures.
   *
   * @param kvUsage the fraction of the rank's KV cache held by running requests (0 to 1)
   * @param prefixQueriedTokens prompt tokens looked up in the prefix cache, cumulative (NaN if not served)
   * @param prefixHitTokens of those, tokens found cached, cumulative (NaN if not served)
   * @param loraAdapters LoRA adapters with running or waiting requests (vLLM's {@code vllm:lora_requests_info})
   */
  public record RankMetrics(int rank, double running, double waiting, double kvUsage, double prefixQueriedTokens,
      double prefixHitTokens, java.util.Set<String> loraAdapters) {

    public RankMetrics {
      loraAdapters = loraAdapters == null ? java.util.Set.of() : java.util.Set.copyOf(loraAdapters);
    }

    /** A rank's figures without LoRA adapters. */
    public RankMetrics(int rank, double running, double waiting, double kvUsage, double prefixQueriedTokens,
        double prefixHitTokens) {
      this(rank, running, waiting, kvUsage, prefixQueriedTokens, prefixHitTokens, null);
    }
  }

  public RankMetrics rank(int rank) {
    for (RankMetrics metrics : ranks) {
      if (metrics.rank() == rank) {
        return metrics;
      }
    }
    return null;
  }

  /**
   * The equivalent of a {@code Workers.ReportLoad} for ranks [0, dpSize): decode blocks = KV usage × the rank's KV
   * blocks, waiting requests and LoRA adapters as served; the pages carry no pending prefill tokens (0). A rank the
   * page does not show reports nothing.
   */
  public List<RankReport> reports(int dpSize, int totalKvBlocks) {
    List<RankReport> reports = new ArrayList<>(dpSize);
    for (int r = 0; r < dpSize; r++) {
      RankMetrics metrics = rank(r);
      if (metrics == null) {
        continue;
      }
      double usage = Double.isFinite(metrics.kvUsage()) ? Math.max(0, Math.min(1, metrics.kvUsage())) : 0;
      long decodeBlocks = Math.round(usage * totalKvBlocks);
      int waiting = Double.isFinite(metrics.waiting()) ? (int) Math.max(0, Math.min(Integer.MAX_VALUE,
          Math.round(metrics.waiting()))) : 0;
      reports.add(new RankReport(r, decodeBlocks, 0, waiting, metrics.loraAdapters()));
    }
    return reports;
  }
}
