package io.kvrouter.core.membership;

import java.util.Set;

/**
 * One rank's engine-reported load in a Workers.ReportLoad call; {@code loraAdapters}: the LoRA adapters the engine
 * serves (never null).
 */
public record RankReport(int dpRank, long decodeBlocks, long prefillTokens, int waitingRequests,
    Set<String> loraAdapters) {

  public RankReport {
    loraAdapters = loraAdapters == null ? Set.of() : Set.copyOf(loraAdapters);
  }

  /** A report naming no LoRA adapter. */
  public RankReport(int dpRank, long decodeBlocks, long prefillTokens, int waitingRequests) {
    this(dpRank, decodeBlocks, prefillTokens, waitingRequests, Set.of());
  }
}
