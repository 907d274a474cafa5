package io.kvrouter.sim.engine;

import java.util.Arrays;

/**
 * A change of one rank's cache as the router's Workers.PublishKvEvents carries it (docs/architecture.md, "The KV
 * index and KV events"): ids form one gap-free sequence per rank; block ids are the engine's own, tokens hashes the
 * router's sequence hashes. No event names more than {@link KvBlockCache#MAX_BLOCKS_PER_EVENT} blocks (the router's
 * per-batch limit), so any single event fits a batch.
 */
public sealed interface KvCacheEvent {
  long eventId();

  /** Block ids the event names (stored or removed); 0 for a clear. */
  int blockCount();

  /**
   * Blocks cached in sequence order under {@code parentBlockId} (null: the chain starts at the root). Their tokens are
   * {@code sequenceTokens[firstBlock × blockSize, (firstBlock + blockIds.length) × blockSize)}; {@code sequenceTokens}
   * is the storing request's whole sequence, shared, never modified (null when the caller gave no tokens).
   */
  record Stored(long eventId, Long parentBlockId, long[] blockIds, long[] tokensHashes, int[] sequenceTokens,
      int firstBlock, int blockSize) implements KvCacheEvent {
    @Override
    public int blockCount() {
      return blockIds.length;
    }

    /** The token ids of the stored blocks, concatenated (empty when the caller gave no tokens). */
    public int[] tokenIds() {
      if (sequenceTokens == null) {
        return new int[0];
      }
      return Arrays.copyOfRange(sequenceTokens, firstBlock * blockSize, (firstBlock + blockIds.length) * blockSize);
    }
  }

  /** Blocks evicted; each was a leaf when it went. */
  record Removed(long eventId, long[] blockIds) implements KvCacheEvent {
    @Override
    public int blockCount() {
      return blockIds.length;
    }
  }

  /** Every cached block was dropped at once (a prefix-cache reset). */
  record Cleared(long eventId) implements KvCacheEvent {
    @Override
    public int blockCount() {
      return 0;
    }
  }
}
