package io.kvrouter.engines.events;

/**
 * One KV cache event as an engine published it (vLLM's {@code BlockStored}, {@code BlockRemoved},
 * {@code AllBlocksCleared}; SGLang's copies of them), decoded but not yet interpreted. Block hashes are the engine's
 * opaque keys as longs ({@link BlockKeys}); absent optional fields are null.
 */
public sealed interface EngineEvent {

  /**
   * @param tokenIds the stored blocks' tokens, {@code tokenCount} of them (a reused buffer is never handed out)
   * @param firstUnhashableBlock index of the first block whose {@code extra_keys} hold something the router's hash
   *     cannot reproduce (multimodal identifiers, prompt embeddings, an unrecognised entry), or -1
   * @param cacheSalt the cache salt found in the first block's {@code extra_keys} (vLLM puts it there for the
   *     request's first block only), or null
   */
  record Stored(long[] blockHashes, Long parentBlockHash, int[] tokenIds, int tokenCount, int blockSize, Long loraId,
      String medium, String loraName, int firstUnhashableBlock, String cacheSalt, Integer groupIdx,
      String specKind) implements EngineEvent {}

  record Removed(long[] blockHashes, String medium, Integer groupIdx) implements EngineEvent {}

  record Cleared() implements EngineEvent {
    public static final Cleared INSTANCE = new Cleared();
  }

  /** An event of a type this connector does not know (a newer engine's); skipped and counted. */
  record Unknown(String type) implements EngineEvent {}
}
