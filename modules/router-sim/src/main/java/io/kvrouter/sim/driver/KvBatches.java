package io.kvrouter.sim.driver;

import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.sim.engine.KvCacheEvent;
import java.util.ArrayList;
import java.util.List;

/**
 * Cuts a rank's events, in order, into batches the router accepts (README "Limits": at most 512 events and 8,192 block
 * hashes per batch, stored blocks plus removed hashes). Event ids keep their one sequence across the batches. Each
 * event names at most 8,192 blocks (the cache splits longer runs), so every event fits a batch.
 */
public final class KvBatches {
  private KvBatches() {}

  public static List<List<KvCacheEvent>> split(List<KvCacheEvent> events) {
    return split(events, RequestLimits.MAX_KV_EVENTS_PER_BATCH, RequestLimits.MAX_KV_BLOCKS_PER_BATCH);
  }

  static List<List<KvCacheEvent>> split(List<KvCacheEvent> events, int maxEvents, int maxBlocks) {
    List<List<KvCacheEvent>> batches = new ArrayList<>();
    List<KvCacheEvent> current = new ArrayList<>();
    int blocks = 0;
    for (KvCacheEvent event : events) {
      int n = event.blockCount();
      if (n > maxBlocks) {
        throw new IllegalArgumentException("event " + event.eventId() + " names " + n + " blocks, more than a batch's "
            + maxBlocks);
      }
      if (!current.isEmpty() && (current.size() == maxEvents || blocks + n > maxBlocks)) {
        batches.add(current);
        current = new ArrayList<>();
        blocks = 0;
      }
      current.add(event);
      blocks += n;
    }
    if (!current.isEmpty()) {
      batches.add(current);
    }
    return batches;
  }
}
