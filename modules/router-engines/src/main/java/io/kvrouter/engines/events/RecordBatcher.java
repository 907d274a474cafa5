package io.kvrouter.engines.events;

import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.selection.RequestLimits;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Cuts a rank's translated events into batches within the router's limits (router-core's {@link RequestLimits}:
 * 512 events and 8,192 block hashes per batch, so a batch fans out to the region in one remoting frame) and gives
 * every event its router event id. A Stored or Removed event above 8,192 blocks becomes several events: a Stored's
 * pieces chain (each piece's parent is the previous piece's last block), so the index holds exactly what one event
 * would have stored. The cut depends on the events alone, so the same events always get the same ids.
 */
public final class RecordBatcher {
  /** Hands out a rank's router event ids, consecutive. */
  public interface EventIds {
    long next();
  }

  private final int maxEvents;
  private final int maxBlocks;

  public RecordBatcher() {
    this(RequestLimits.MAX_KV_EVENTS_PER_BATCH, RequestLimits.MAX_KV_BLOCKS_PER_BATCH);
  }

  RecordBatcher(int maxEvents, int maxBlocks) {
    this.maxEvents = maxEvents;
    this.maxBlocks = maxBlocks;
  }

  public List<List<KvEventRecord>> batches(List<KvEvent> events, EventIds ids) {
    List<List<KvEventRecord>> batches = new ArrayList<>();
    List<KvEventRecord> current = new ArrayList<>();
    int blocks = 0;
    for (KvEvent event : events) {
      for (KvEventRecord piece : pieces(event, ids)) {
        int size = size(piece);
        if (!current.isEmpty() && (current.size() == maxEvents || blocks + size > maxBlocks)) {
          batches.add(current);
          current = new ArrayList<>();
          blocks = 0;
        }
        current.add(piece);
        blocks += size;
      }
    }
    if (!current.isEmpty()) {
      batches.add(current);
    }
    return batches;
  }

  private List<KvEventRecord> pieces(KvEvent event, EventIds ids) {
    if (event instanceof KvEvent.Stored stored) {
      long[] hashes = stored.blockHashes();
      if (hashes.length <= maxBlocks) {
        return List.of(new KvEventRecord(ids.next(), KvEventRecord.Kind.STORED, stored.tier(),
            stored.parentBlockHash(), hashes, stored.tokensHashes()));
      }
      List<KvEventRecord> pieces = new ArrayList<>();
      Long parent = stored.parentBlockHash();
      for (int from = 0; from < hashes.length; from += maxBlocks) {
        int to = Math.min(hashes.length, from + maxBlocks);
        pieces.add(new KvEventRecord(ids.next(), KvEventRecord.Kind.STORED, stored.tier(), parent,
            Arrays.copyOfRange(hashes, from, to), Arrays.copyOfRange(stored.tokensHashes(), from, to)));
        parent = hashes[to - 1];
      }
      return pieces;
    }
    if (event instanceof KvEvent.Removed removed) {
      long[] hashes = removed.blockHashes();
      if (hashes.length <= maxBlocks) {
        return List.of(new KvEventRecord(ids.next(), KvEventRecord.Kind.REMOVED, removed.tier(), null, hashes, null));
      }
      List<KvEventRecord> pieces = new ArrayList<>();
      for (int from = 0; from < hashes.length; from += maxBlocks) {
        pieces.add(new KvEventRecord(ids.next(), KvEventRecord.Kind.REMOVED, removed.tier(), null,
            Arrays.copyOfRange(hashes, from, Math.min(hashes.length, from + maxBlocks)), null));
      }
      return pieces;
    }
    return List.of(new KvEventRecord(ids.next(), KvEventRecord.Kind.CLEARED, StorageTier.DEVICE, null,
        null, null));
  }

  private static int size(KvEventRecord record) {
    return record.blockHashes() == null ? 0 : record.blockHashes().length;
  }
}
