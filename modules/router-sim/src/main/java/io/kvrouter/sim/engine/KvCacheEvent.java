package io.kvrouter.sim.engine;

/**
 * A change of one rank's cache as the router's Workers.PublishKvEvents carries it (DESIGN.md §3): ids form one
 * gap-free sequence per rank; block ids are the engine's own, tokens hashes the router's sequence hashes.
 */
public sealed interface KvCacheEvent {
  long eventId();

  /** Blocks cached in sequence order under {@code parentBlockId} (null: the chain starts at the root). */
  record Stored(long eventId, Long parentBlockId, long[] blockIds, long[] tokensHashes) implements KvCacheEvent {}

  /** Blocks evicted; each was a leaf when it went. */
  record Removed(long eventId, long[] blockIds) implements KvCacheEvent {}
}
