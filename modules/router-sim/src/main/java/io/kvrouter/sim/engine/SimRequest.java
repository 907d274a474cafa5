package io.kvrouter.sim.engine;

import io.kvrouter.core.hashing.BlockHasher;

/**
 * A request as an engine sees it: its whole token sequence (prompt, then the output the engine will "generate"),
 * and the router's sequence hash of every full block of it (BlockHasher; docs/architecture.md, "Block hashing"),
 * which is how the engine names the blocks it caches.
 */
public record SimRequest(String id, long arrivalMicros, int[] tokens, int promptTokens, int blockSize,
    long[] blockHashes) {

  public SimRequest {
    if (promptTokens <= 0 || promptTokens >= tokens.length) {
      throw new IllegalArgumentException("request " + id + " needs a prompt and at least one output token");
    }
  }

  /** Hashes the full blocks of {@code tokens} with the router's unsalted seed. */
  public static SimRequest of(String id, long arrivalMicros, int[] tokens, int promptTokens, int blockSize) {
    return new SimRequest(id, arrivalMicros, tokens, promptTokens, blockSize,
        BlockHasher.sequenceHashes(tokens, blockSize, BlockHasher.BASE_SEED));
  }

  public int outputTokens() {
    return tokens.length - promptTokens;
  }

  /**
   * Leading blocks a cache hit may cover: the prompt's full blocks, less the last one if the prompt ends on a
   * block boundary, since at least one prompt token must be computed to produce the first output token.
   */
  public int hitLimit() {
    return (promptTokens - 1) / blockSize;
  }

  /** Blocks the whole sequence occupies, the partial last one included. */
  public int totalBlocks() {
    return (tokens.length + blockSize - 1) / blockSize;
  }
}
