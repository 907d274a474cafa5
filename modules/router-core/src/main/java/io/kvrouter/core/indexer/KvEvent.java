package io.kvrouter.core.indexer;

import java.util.Objects;

/**
 * One engine KV cache event for a (worker, dp_rank), as carried by {@code Workers.PublishKvEvents}. Block hashes are
 * the engine's opaque ids (used only to find a block again for Removed and as a parent); tokens hashes are the
 * router's sequence hashes the index is navigated by.
 */
public sealed interface KvEvent {

  /**
   * Blocks stored as a chain: {@code blocks[0]} is a child of {@code parentBlockHash} (or of the root when it is
   * {@code null}) and each later block a child of the one before.
   */
  record Stored(StorageTier tier, Long parentBlockHash, long[] blockHashes, long[] tokensHashes) implements KvEvent {
    public Stored {
      Objects.requireNonNull(tier, "tier");
      Objects.requireNonNull(blockHashes, "blockHashes");
      Objects.requireNonNull(tokensHashes, "tokensHashes");
      if (blockHashes.length != tokensHashes.length) {
        throw new IllegalArgumentException(
            "blockHashes and tokensHashes differ in length: " + blockHashes.length + " vs " + tokensHashes.length);
      }
    }
  }

  /** Blocks evicted from one tier. */
  record Removed(StorageTier tier, long[] blockHashes) implements KvEvent {
    public Removed {
      Objects.requireNonNull(tier, "tier");
      Objects.requireNonNull(blockHashes, "blockHashes");
    }
  }

  /** The rank dropped its whole cache (every tier). */
  record Cleared() implements KvEvent {
    public static final Cleared INSTANCE = new Cleared();
  }
}
