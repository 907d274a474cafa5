package io.kvrouter.core.policy;

import io.kvrouter.core.model.WorkerConfig;

/**
 * When a rank counts as busy: prefill tokens above an absolute threshold or above a fraction of its
 * {@code max_num_batched_tokens}, or decode blocks above a fraction of its {@code total_kv_blocks}, OR'ed. Null
 * thresholds are off; with all three off nothing is ever busy. The one copy of this rule: overload rejection and the
 * admission queue both judge by it, each with its own thresholds.
 */
public record BusyThresholds(Long prefillTokens, Double prefillFrac, Double decodeBlocksFrac) {
  public static final BusyThresholds OFF = new BusyThresholds(null, null, null);

  /** Whether any threshold is set. */
  public boolean isSet() {
    return prefillTokens != null || prefillFrac != null || decodeBlocksFrac != null;
  }

  /** Whether a rank of {@code worker} holding {@code prefill} tokens and {@code decode} blocks is above a threshold. */
  public boolean exceeded(WorkerConfig worker, long prefill, long decode) {
    return (decodeBlocksFrac != null && decode > decodeBlocksFrac * worker.totalKvBlocks())
        || (prefillTokens != null && prefill > prefillTokens)
        || (prefillFrac != null && prefill > prefillFrac * worker.maxNumBatchedTokens());
  }

  /** These thresholds, each unset one taken from {@code inherited}. */
  BusyThresholds orElse(BusyThresholds inherited) {
    return new BusyThresholds(prefillTokens != null ? prefillTokens : inherited.prefillTokens,
        prefillFrac != null ? prefillFrac : inherited.prefillFrac,
        decodeBlocksFrac != null ? decodeBlocksFrac : inherited.decodeBlocksFrac);
  }
}
