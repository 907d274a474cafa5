package io.kvrouter.core.testkit;

import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.KvIndex;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.model.Rank;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * Writes events into a {@link KvIndex} as one engine stream per rank would: each rank's events numbered 1, 2, 3, ...
 * through the index's only write path, {@link KvIndex#apply(Rank, long, KvEvent)}.
 */
public final class IndexWrites {
  /** One writer per index (KvIndex keeps identity equality), so every write to it numbers on from the last. */
  private static final Map<KvIndex, IndexWrites> WRITERS = Collections.synchronizedMap(new WeakHashMap<>());

  private final KvIndex index;
  private final Map<Rank, Long> lastIds = new HashMap<>();

  private IndexWrites(KvIndex index) {
    this.index = index;
  }

  /** The writer of {@code index}. */
  public static IndexWrites to(KvIndex index) {
    return WRITERS.computeIfAbsent(index, IndexWrites::new);
  }

  /** Stores a chain of blocks; returns false if the index dropped it (the rank did not hold the parent). */
  public boolean stored(Rank rank, StorageTier tier, Long parentBlockHash, long[] blockHashes, long[] tokensHashes) {
    long dropped = index.droppedStoreCount();
    index.apply(rank, next(rank), new KvEvent.Stored(tier, parentBlockHash, blockHashes, tokensHashes));
    return index.droppedStoreCount() == dropped;
  }

  public void removed(Rank rank, StorageTier tier, long[] blockHashes) {
    index.apply(rank, next(rank), new KvEvent.Removed(tier, blockHashes));
  }

  public void cleared(Rank rank) {
    index.apply(rank, next(rank), KvEvent.Cleared.INSTANCE);
  }

  private synchronized long next(Rank rank) {
    return lastIds.merge(rank, 1L, Long::sum);
  }
}
