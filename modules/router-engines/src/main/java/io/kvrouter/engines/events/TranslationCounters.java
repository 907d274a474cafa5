package io.kvrouter.engines.events;

/**
 * What one rank's translator did, cumulative; written by the rank's connector thread, read by anyone (each value is
 * current; together they may be a moment apart).
 *
 * @param storedBlocks blocks of Stored events passed on to the index
 * @param removedBlocks blocks of Removed events passed on (blocks the rank held)
 * @param engineClears AllBlocksCleared events passed on
 * @param unknownParentBlocks blocks dropped: their chain's parent is not held by the rank
 * @param unhashableBlocks blocks dropped: extra keys the router's hash cannot reproduce (multimodal items, prompt
 *     embeddings), or tokens that are not integers
 * @param loraWithoutNameBlocks blocks dropped: a LoRA id without a LoRA name (ids are engine-local)
 * @param mismatchedBlocks blocks dropped: token count not block_size × blocks, a block size other than the
 *     registered one, or an offloaded copy of a block the rank does not hold
 * @param overCapacityBlocks blocks dropped past the rank's bound (total_kv_blocks × blocks-per-kv-block)
 * @param otherGroupEvents events of a KV cache group other than the full-attention one, skipped
 * @param unknownMediumEvents events on a medium the router has no tier for, skipped
 * @param unknownTypeEvents events of a type the connector does not know, skipped
 */
public record TranslationCounters(long storedBlocks, long removedBlocks, long engineClears, long unknownParentBlocks,
    long unhashableBlocks, long loraWithoutNameBlocks, long mismatchedBlocks, long overCapacityBlocks,
    long otherGroupEvents, long unknownMediumEvents, long unknownTypeEvents) {

  public static final TranslationCounters NONE = new TranslationCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

  /** Blocks or events dropped for any reason. */
  public long skipped() {
    return unknownParentBlocks + unhashableBlocks + loraWithoutNameBlocks + mismatchedBlocks + overCapacityBlocks
        + otherGroupEvents + unknownMediumEvents + unknownTypeEvents;
  }
}
