package io.kvrouter.sim.engine;

/**
 * How long one continuous-batching step takes: a roofline over the step's work, the slower of reading memory and
 * computing, plus a fixed per-step overhead (scheduling, kernel launches, sampling).
 *
 * <ul>
 *   <li>memory: the weights once per step, plus the KV cache of every token in context (decodes read their whole
 *       context, prefill chunks read their cached prefix), at {@code hbmBytesPerSecond × memoryEfficiency};</li>
 *   <li>compute: {@code 2 × parameters} FLOPs per token processed (prefill tokens and one per decoding sequence),
 *       plus attention, {@code 4 × layers × hidden} FLOPs per (query token, context token) pair, at
 *       {@code peakFlops × flopsEfficiency}.</li>
 * </ul>
 *
 * So prefill time grows with the uncached tokens (cached ones are neither computed nor attended to as queries) and
 * a decode step's time with the batch size and the context it reads. Sources of the defaults: the README.
 */
public record TimingModel(
    double parameters,
    double weightBytes,
    int layers,
    int hidden,
    double kvBytesPerToken,
    double hbmBytesPerSecond,
    double memoryEfficiency,
    double peakFlops,
    double flopsEfficiency,
    double stepOverheadMicros) {

  /** Llama-3.1-8B in BF16 on one H100 SXM 80 GB (README: where each number comes from). */
  public static TimingModel llama8bOnH100() {
    return new TimingModel(8.03e9, 16.06e9, 32, 4096, 131_072, 3.35e12, 0.8, 989e12, 0.5, 500);
  }

  /**
   * One step's duration in microseconds.
   *
   * @param prefillTokens uncached prompt tokens computed in this step (all chunks)
   * @param prefillAttentionPairs sum over those tokens of the context each attends to
   * @param prefillContextTokens cached prefix tokens the chunks read
   * @param decodeSequences sequences producing one token each
   * @param decodeContextTokens sum of those sequences' context lengths
   */
  public long stepMicros(long prefillTokens, double prefillAttentionPairs, long prefillContextTokens,
      int decodeSequences, long decodeContextTokens) {
    double bytes = weightBytes + kvBytesPerToken * (decodeContextTokens + prefillContextTokens);
    double memorySeconds = bytes / (hbmBytesPerSecond * memoryEfficiency);
    double attentionFlopsPerPair = 4.0 * layers * hidden;
    double flops = 2 * parameters * (prefillTokens + decodeSequences)
        + attentionFlopsPerPair * (prefillAttentionPairs + decodeContextTokens);
    double computeSeconds = flops / (peakFlops * flopsEfficiency);
    return Math.round(stepOverheadMicros + 1e6 * Math.max(memorySeconds, computeSeconds));
  }
}
