package io.kvrouter.core.indexer;

import io.kvrouter.core.model.Rank;
import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;

/**
 * One incarnation of a rank inside one tree. Readers only read {@link #id} (final); everything else belongs to the
 * writer. A rank that is removed and comes back gets a new state with a new id, so a reader that resolved the old id
 * can never attribute the new incarnation's blocks to it, or the reverse.
 */
final class RankState {
  final Rank rank;
  final int id;
  /**
   * Engine block hash → the node this rank stored it as (event-fed trees only; writer only). Only nodes that hold
   * this rank are in it, so Removed and a Stored's parent resolve in O(1) without walking the tree.
   */
  final Long2ObjectOpenHashMap<Node> lookup;
  /**
   * How many of this rank's entries lack the device tier (writer-maintained, read by lookups). At zero every block
   * the rank holds is on the device, so its device run is simply its held depth, found by binary search.
   */
  volatile int entriesWithoutDevice;
  boolean removed;
  boolean seenEvent;
  long lastEventId;

  RankState(Rank rank, int id, boolean withLookup) {
    this.rank = rank;
    this.id = id;
    this.lookup = withLookup ? new Long2ObjectOpenHashMap<>() : null;
  }
}
