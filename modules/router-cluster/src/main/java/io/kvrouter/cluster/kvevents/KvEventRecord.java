package io.kvrouter.cluster.kvevents;

import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.StorageTier;

/**
 * One KV event in a form that serializes flat (no polymorphic field): {@code kind} is STORED, REMOVED or CLEARED.
 * Stored uses parent, block and tokens hashes; Removed uses block hashes; the tier applies to both.
 */
public record KvEventRecord(long eventId, Kind kind, StorageTier tier, Long parentBlockHash, long[] blockHashes,
    long[] tokensHashes) {

  public enum Kind {
    STORED,
    REMOVED,
    CLEARED
  }

  public KvEvent toEvent() {
    return switch (kind) {
      case STORED -> new KvEvent.Stored(tier, parentBlockHash, blockHashes, tokensHashes);
      case REMOVED -> new KvEvent.Removed(tier, blockHashes);
      case CLEARED -> KvEvent.Cleared.INSTANCE;
    };
  }
}
