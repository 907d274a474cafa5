package io.kvrouter.core.load;

import java.util.Collections;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Engine-reported load of one rank (Workers.ReportLoad); also the worker's heartbeat. {@code loraAdapters}: the LoRA
 * adapters the engine reported serving (running or waiting requests; vLLM's {@code vllm:lora_requests_info}), sorted,
 * never null.
 */
public record ReportedLoad(long decodeBlocks, long prefillTokens, int waitingRequests, long reportedAtMillis,
    SortedSet<String> loraAdapters) {

  public ReportedLoad {
    loraAdapters = loraAdapters == null || loraAdapters.isEmpty() ? Collections.emptySortedSet()
        : Collections.unmodifiableSortedSet(new TreeSet<>(loraAdapters));
  }

  /** A report naming no LoRA adapter. */
  public ReportedLoad(long decodeBlocks, long prefillTokens, int waitingRequests, long reportedAtMillis) {
    this(decodeBlocks, prefillTokens, waitingRequests, reportedAtMillis, null);
  }

  /** A report with {@code adapters}. */
  public static ReportedLoad of(long decodeBlocks, long prefillTokens, int waitingRequests, long reportedAtMillis,
      Set<String> adapters) {
    return new ReportedLoad(decodeBlocks, prefillTokens, waitingRequests, reportedAtMillis,
        adapters == null ? null : new TreeSet<>(adapters));
  }
}
