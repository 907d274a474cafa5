package io.kvrouter.sim.server;

import io.kvrouter.sim.engine.EngineRank;
import io.kvrouter.sim.engine.TimingModel;
import java.util.Locale;

/**
 * One simulated engine process: what it serves, its ranks' caches and scheduler, its clock and its ports.
 *
 * @param model the served model name (vLLM's --served-model-name)
 * @param host the address every socket binds (loopback)
 * @param httpPort the OpenAI-compatible API and /metrics; 0 picks a free port
 * @param dpSize data-parallel ranks, each a cache and a scheduler of its own (vLLM's engine cores)
 * @param kvBlocks KV blocks per rank (vLLM's num_gpu_blocks)
 * @param blockSize tokens per block
 * @param maxModelLen longest prompt plus output; at most what a rank's cache holds
 * @param timeScale simulated time runs this many times faster than the wall clock
 * @param kvEventsPort the ZMQ PUB port of rank 0 (rank r: + r); 0 picks free ports; -1 publishes no events
 * @param kvReplayPort the replay ROUTER port of rank 0 (rank r: + r); 0 picks free ports; -1 serves no replay
 * @param kvTopic the topic frame of every published batch (vLLM's kv-events-config "topic")
 * @param encoding how events are encoded (vLLM 0.33: tagged maps in a positional batch)
 * @param replayFormat the replay answer's frames
 * @param seed output tokens are drawn from (seed, prompt, sample)
 * @param eosMinTokens with ignore_eos off, an output ends ("stop") after a length drawn from [min, max] ...
 * @param eosMaxTokens ... unless max_tokens ends it first ("length")
 * @param vocabularySize output ids are drawn below this (the tokenizer's, when there is one)
 */
public record EngineConfig(
    String model,
    String host,
    int httpPort,
    int dpSize,
    int kvBlocks,
    int blockSize,
    int maxModelLen,
    EngineRank.Limits limits,
    TimingModel timing,
    double timeScale,
    int kvEventsPort,
    int kvReplayPort,
    String kvTopic,
    KvEventEncoding encoding,
    ReplayFormat replayFormat,
    long seed,
    int eosMinTokens,
    int eosMaxTokens,
    int vocabularySize) {

  /** How the events of a batch are encoded; the batch itself is positional in both (vLLM's EventBatch). */
  public enum KvEventEncoding {
    /** vLLM 0.33 (since vllm-project/vllm#42892): each event a map tagged by "type", defaults omitted. */
    MAP,
    /** vLLM before #42892: each event a tagged positional array, trailing defaults omitted. */
    ARRAY
  }

  /** The frames of a replay answer after the DEALER's empty delimiter. */
  public enum ReplayFormat {
    /** vLLM 0.33: {@code [topic, seq, payload]} per batch, then {@code ["", -1, ""]}. */
    TOPIC,
    /** Earlier vLLM: {@code [seq, payload]} per batch, then {@code [-1, ""]}. */
    LEGACY
  }

  public static final String DEFAULT_MODEL = "org/llama-8b";
  public static final int DEFAULT_MAX_MODEL_LEN = 131_072;

  public EngineConfig {
    if (model == null || model.isBlank()) {
      throw new IllegalArgumentException("a served model name is required");
    }
    if (dpSize < 1 || kvBlocks < 1 || blockSize < 1) {
      throw new IllegalArgumentException("invalid engine shape: " + dpSize + " rank(s) of " + kvBlocks + " blocks of "
          + blockSize);
    }
    if (!(timeScale > 0) || Double.isInfinite(timeScale)) {
      throw new IllegalArgumentException("--time-scale must be a positive number, got " + timeScale);
    }
    if (eosMinTokens < 1 || eosMaxTokens < eosMinTokens) {
      throw new IllegalArgumentException("invalid natural output length range " + eosMinTokens + ".." + eosMaxTokens);
    }
    long fits = (long) (kvBlocks - limits.watermarkBlocks()) * blockSize;
    if (maxModelLen < 2 || maxModelLen > fits) {
      throw new IllegalArgumentException(String.format(Locale.ROOT,
          "max_model_len %d does not fit a rank's KV cache: %d blocks of %d tokens less a watermark of %d blocks "
              + "hold %d tokens (vLLM refuses to start the same way); lower --max-model-len or raise --kv-blocks",
          maxModelLen, kvBlocks, blockSize, limits.watermarkBlocks(), fits));
    }
  }

  /** vLLM's scheduler defaults: 8,192 batched tokens per step, 256 running sequences, 1 % of blocks as watermark. */
  public static EngineRank.Limits defaultLimits(int kvBlocks) {
    return new EngineRank.Limits(8_192, 256, Math.max(1, kvBlocks / 100));
  }

  /** The longest context a rank of this size holds, capped at Llama 3.1's 131,072. */
  public static int defaultMaxModelLen(int kvBlocks, int blockSize) {
    long fits = (long) (kvBlocks - defaultLimits(kvBlocks).watermarkBlocks()) * blockSize;
    return (int) Math.min(DEFAULT_MAX_MODEL_LEN, fits);
  }

  /** A test-sized engine on ephemeral loopback ports. */
  public static EngineConfig loopback(String model, int kvBlocks, int blockSize, double timeScale) {
    return new EngineConfig(model, "127.0.0.1", 0, 1, kvBlocks, blockSize, defaultMaxModelLen(kvBlocks, blockSize),
        defaultLimits(kvBlocks), TimingModel.llama8bOnH100(), timeScale, 0, 0, "kv-events", KvEventEncoding.MAP,
        ReplayFormat.TOPIC, 42, 16, 256, TokenIdsOnlyTokenizer.DEFAULT_VOCABULARY);
  }

  public EngineConfig withDpSize(int ranks) {
    return new EngineConfig(model, host, httpPort, ranks, kvBlocks, blockSize, maxModelLen, limits, timing, timeScale,
        kvEventsPort, kvReplayPort, kvTopic, encoding, replayFormat, seed, eosMinTokens, eosMaxTokens, vocabularySize);
  }

  public EngineConfig withEncoding(KvEventEncoding eventEncoding, ReplayFormat replay) {
    return new EngineConfig(model, host, httpPort, dpSize, kvBlocks, blockSize, maxModelLen, limits, timing,
        timeScale, kvEventsPort, kvReplayPort, kvTopic, eventEncoding, replay, seed, eosMinTokens, eosMaxTokens,
        vocabularySize);
  }
}
