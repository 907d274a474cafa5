package io.kvrouter.core.indexer;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionView;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A model's KV index as the kv policy sees it. Each worker starts approximate (its overlaps guessed from what the
 * router booked on it) and becomes event-fed at its first KV event, from then on trusting only the engine's events.
 * The two are kept in separate trees on purpose: engines may salt their hashes, so router-computed guesses must
 * never be mixed into the event-fed tree, and a worker's stale guesses are dropped the moment it starts publishing.
 *
 * <p>Writes (events, routed records, expiry, removal) are serialized by this object's monitor; the selection path
 * ({@link #overlaps(SelectionView, long[], Candidates)}) takes no lock and walks each tree at most once.
 */
public final class ModelKvIndex implements KvOverlapSource {
  private final KvIndex events = new KvIndex();
  private final ApproximateKvIndex approximate;
  private final Set<String> eventFed = ConcurrentHashMap.newKeySet();
  private final LongSupplier clock;
  /** Events applied (not ignored as old or duplicate ids); written under this object's monitor. */
  private volatile long appliedEventCount;

  /** Default approximate settings (120 s TTL, 2^20 entries, prune to 80 %). */
  public ModelKvIndex(LongSupplier clock) {
    this(ApproximateKvIndex.DEFAULT_TTL_MILLIS, ApproximateKvIndex.DEFAULT_MAX_ENTRIES,
        ApproximateKvIndex.DEFAULT_PRUNE_TARGET_RATIO, clock);
  }

  public ModelKvIndex(long ttlMillis, int maxApproximateEntries, double pruneTargetRatio, LongSupplier clock) {
    this.approximate = new ApproximateKvIndex(ttlMillis, maxApproximateEntries, pruneTargetRatio, clock);
    this.clock = clock;
  }

  /** Applies one KV event (see {@link KvIndex#apply(Rank, long, KvEvent)}), switching the worker to event-fed. */
  public synchronized boolean apply(Rank rank, long eventId, KvEvent event) {
    return apply(rank, eventId, event, Integer.MAX_VALUE);
  }

  /**
   * As {@link #apply(Rank, long, KvEvent)}, the rank holding at most {@code maxBlocks} blocks (see
   * {@link KvIndex#apply(Rank, long, KvEvent, int)}).
   */
  public synchronized boolean apply(Rank rank, long eventId, KvEvent event, int maxBlocks) {
    markEventFed(rank.workerId());
    boolean applied = events.apply(rank, eventId, event, maxBlocks);
    if (applied) {
      appliedEventCount++;
    }
    return applied;
  }

  /** Records a Book decision; ignored for event-fed workers, whose caches the events describe. */
  public synchronized void recordRouted(Rank rank, long[] sequenceHashes, long nowMillis) {
    if (!eventFed.contains(rank.workerId())) {
      approximate.recordRouted(rank, sequenceHashes, nowMillis);
    }
  }

  @Override
  public void onBooked(Rank rank, long[] sequenceHashes, long nowMillis) {
    if (sequenceHashes.length > 0) {
      recordRouted(rank, sequenceHashes, nowMillis);
    }
  }

  @Override
  public synchronized void expire(long nowMillis) {
    approximate.expire(nowMillis);
  }

  /** Forgets the worker in both trees (and its event-fed status, so a re-registered worker starts over). */
  @Override
  public synchronized void removeWorker(String workerId) {
    eventFed.remove(workerId);
    events.removeWorker(workerId);
    approximate.removeWorker(workerId);
  }

  private void markEventFed(String workerId) {
    if (eventFed.add(workerId)) {
      approximate.removeWorker(workerId);
    }
  }

  @Override
  public void overlaps(SelectionView view, long[] sequenceHashes, Candidates candidates) {
    // A worker's ranks have event-fed states only once it publishes, and its approximate states are dropped then;
    // should a rank briefly have both, its events win.
    RankState[] eventStates = events.tree().resolve(view);
    RankState[] approximateStates = approximate.tree().resolve(view);
    boolean anyEventFed = false;
    boolean anyApproximate = false;
    for (int i = 0; i < candidates.size(); i++) {
      int rankIndex = candidates.rankIndex(i);
      if (eventStates[rankIndex] != null) {
        anyEventFed = true;
      } else if (approximateStates[rankIndex] != null) {
        anyApproximate = true;
      } else {
        candidates.setOverlap(i, 0, 0, 0);
      }
    }
    RadixTree.Scratch scratch = RadixTree.scratch();
    Node[] eventPath = null;
    Node[] approxPath = null;
    int eventMatched = 0;
    int approxMatched = 0;
    try {
      if (anyEventFed) {
        eventPath = scratch.first(sequenceHashes.length);
        eventMatched = events.tree().walk(sequenceHashes, sequenceHashes.length, eventPath);
        KvIndex.fillAll(candidates, eventStates, eventPath, eventMatched, scratch);
      }
      if (anyApproximate) {
        approxPath = scratch.second(sequenceHashes.length);
        approxMatched = approximate.tree().walk(sequenceHashes, sequenceHashes.length, approxPath);
        ApproximateKvIndex.fillDepths(candidates, approximateStates, eventStates, approxPath, approxMatched,
            approximate.relativeNow(clock.getAsLong()), scratch);
      }
    } finally {
      if (eventPath != null) {
        RadixTree.release(eventPath, eventMatched);
      }
      if (approxPath != null) {
        RadixTree.release(approxPath, approxMatched);
      }
    }
  }

  /** One rank's overlap as the selection path would report it (allocates; for diagnostics and tests). */
  public TieredOverlap overlap(Rank rank, long[] sequenceHashes, long nowMillis) {
    if (eventFed.contains(rank.workerId())) {
      return events.overlap(rank, sequenceHashes);
    }
    return new TieredOverlap(approximate.overlap(rank, sequenceHashes, nowMillis), 0, 0);
  }

  public Set<String> eventFedWorkers() {
    return new TreeSet<>(eventFed);
  }

  public long gapCount() {
    return events.gapCount();
  }

  /** Events applied to the event-fed index since this index was made (old or duplicate ids not counted). */
  public long appliedEventCount() {
    return appliedEventCount;
  }

  /** Stored events dropped because their rank did not hold their parent block. */
  public long droppedStoreCount() {
    return events.droppedStoreCount();
  }

  public long overCapacityBlockCount() {
    return events.overCapacityBlockCount();
  }

  /** The event-fed index (read-only use: writes must go through this holder). */
  public KvIndex events() {
    return events;
  }

  /** The approximate index (read-only use: writes must go through this holder). */
  public ApproximateKvIndex approximate() {
    return approximate;
  }
}
