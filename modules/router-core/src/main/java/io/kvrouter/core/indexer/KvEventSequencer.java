package io.kvrouter.core.indexer;

import io.kvrouter.core.model.Rank;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * Puts a model's KV events back in event-id order per (worker, dp_rank) before they reach its {@link ModelKvIndex},
 * so that batches of one engine arriving through different router nodes (or overtaking each other on one) are not
 * mistaken for lost events.
 *
 * <p>An event whose id is the rank's next one applies at once, followed by any held events it makes contiguous. An
 * early event (a later id while some before it are missing) is held. The missing ids are declared lost (a gap) when
 * an event has been held {@code windowMillis} (checked by {@link #expire()}, which the caller runs periodically) or
 * when holding one more would exceed {@code maxHeldPerRank}: the held events are then applied from the lowest id, and
 * the index, seeing the id jump, clears the rank first and counts the gap, as it always has. An id the rank already
 * applied, or one already held, is a duplicate and is dropped.
 *
 * <p>The index keeps the last applied id of each rank (there is one copy of it); a rank the index has no id for
 * (never fed, or its worker was removed) starts a stream: ids {@value #FIRST_ID} and below apply at once, a higher
 * first id is held like an early event, so that lower ids arriving within the window still go first (after the
 * window the lowest held id starts the stream, with no gap).
 *
 * <p>Thread-safe: every write takes the index's monitor, the one writer lock of a model's index.
 */
public final class KvEventSequencer {
  /** A stream's natural first event id (engines number from 0 or 1). */
  public static final long FIRST_ID = 1;

  /**
   * @param windowMillis how long an early event waits for the ids before it
   * @param maxHeldPerRank how many early events a rank may hold; 0 turns reordering off (every early id is a gap at
   *     once)
   */
  public record Settings(long windowMillis, int maxHeldPerRank) {
    public Settings {
      if (windowMillis < 0) {
        throw new IllegalArgumentException("reorder window must not be negative, got " + windowMillis + " ms");
      }
      if (maxHeldPerRank < 0) {
        throw new IllegalArgumentException("max held events per rank must not be negative, got " + maxHeldPerRank);
      }
    }
  }

  /** One event with its per-rank id, as an engine numbered it. */
  public record Sequenced(long eventId, KvEvent event) {}

  /**
   * What one offered batch did.
   *
   * @param applied events of the batch applied to the index during the call
   * @param held events of the batch still waiting for lower ids when the call returned (accepted, not yet applied)
   * @param duplicates events of the batch dropped because the rank had already applied or held their id
   * @param released events of earlier batches that this batch made contiguous and applied
   * @param gaps gaps declared during the call (the hold bound was hit), each clearing the rank
   */
  public record Outcome(int applied, int held, int duplicates, int released, long gaps) {}

  /**
   * @param held events held now, over all ranks
   * @param heldTotal events ever held (each arrived before an id below it)
   * @param gaps gaps declared (window passed or bound hit); the index's own gap count includes them
   */
  public record Counters(long held, long heldTotal, long gaps) {
    public static final Counters NONE = new Counters(0, 0, 0);
  }

  /** A rank's early events by id, and the bound its last batch was applied with. */
  private static final class Pending {
    final TreeMap<Long, Held> events = new TreeMap<>();
    int maxBlocks;
  }

  private record Held(KvEvent event, long heldAtMillis, long batch) {}

  /** Tallies one call: which events were this call's own is known by their batch number. */
  private static final class Tally {
    final long batch;
    int applied;
    int held;
    int duplicates;
    int released;
    long gaps;

    Tally(long batch) {
      this.batch = batch;
    }

    void appliedHeld(Held held) {
      if (held.batch == batch) {
        this.held--;
        applied++;
      } else {
        released++;
      }
    }

    Outcome outcome() {
      return new Outcome(applied, held, duplicates, released, gaps);
    }
  }

  private static final long NO_ID = Long.MIN_VALUE;

  private final ModelKvIndex index;
  private final Settings settings;
  private final LongSupplier clock;
  private final Map<Rank, Pending> pending = new HashMap<>();
  private long batches;
  private volatile long heldNow;
  private volatile long heldTotal;
  private volatile long gapCount;

  public KvEventSequencer(ModelKvIndex index, Settings settings, LongSupplier clock) {
    this.index = index;
    this.settings = settings;
    this.clock = clock;
  }

  /** The index this sequencer feeds. */
  public ModelKvIndex index() {
    return index;
  }

  /**
   * Offers one batch of a rank's events (in any order), each rank holding at most {@code maxBlocks} blocks (see
   * {@link ModelKvIndex#apply(Rank, long, KvEvent, int)}).
   */
  public Outcome offer(Rank rank, int maxBlocks, List<Sequenced> events) {
    synchronized (index) {
      Tally tally = new Tally(++batches);
      long now = clock.getAsLong();
      Pending rankPending = pending.get(rank);
      for (Sequenced event : events) {
        long last = lastApplied(rank);
        long id = event.eventId();
        if ((last != NO_ID && id <= last) || (rankPending != null && rankPending.events.containsKey(id))) {
          tally.duplicates++;
        } else if (isNext(last, id)) {
          index.apply(rank, id, event.event(), maxBlocks);
          tally.applied++;
          if (rankPending != null) {
            rankPending.maxBlocks = maxBlocks;
            releaseRun(rank, rankPending, tally);
          }
        } else {
          if (rankPending == null) {
            rankPending = new Pending();
            pending.put(rank, rankPending);
          }
          rankPending.maxBlocks = maxBlocks;
          rankPending.events.put(id, new Held(event.event(), now, tally.batch));
          tally.held++;
          heldTotal++;
          while (rankPending.events.size() > settings.maxHeldPerRank()) {
            // Holding more would be unbounded: the lowest missing ids are lost.
            releaseThrough(rank, rankPending, rankPending.events.firstKey(), tally);
          }
        }
      }
      if (rankPending != null && rankPending.events.isEmpty()) {
        pending.remove(rank);
      }
      updateHeldNow();
      return tally.outcome();
    }
  }

  /**
   * Declares lost the ids missing before every event held for the window or longer, applying the held events up to
   * the last such one (and those they make contiguous). Returns how many gaps this declared.
   */
  public long expire() {
    if (heldNow == 0) {
      return 0;
    }
    synchronized (index) {
      Tally tally = new Tally(0);
      long cutoff = clock.getAsLong() - settings.windowMillis();
      for (Iterator<Map.Entry<Rank, Pending>> it = pending.entrySet().iterator(); it.hasNext(); ) {
        Map.Entry<Rank, Pending> entry = it.next();
        Pending rankPending = entry.getValue();
        long expiredUpTo = NO_ID;
        for (Map.Entry<Long, Held> held : rankPending.events.entrySet()) {
          if (held.getValue().heldAtMillis() <= cutoff) {
            expiredUpTo = held.getKey();
          }
        }
        if (expiredUpTo != NO_ID) {
          releaseThrough(entry.getKey(), rankPending, expiredUpTo, tally);
        }
        if (rankPending.events.isEmpty()) {
          it.remove();
        }
      }
      updateHeldNow();
      return tally.gaps;
    }
  }

  /** Drops the held events of ranks whose worker {@code present} no longer accepts (a removed worker). */
  public void retainWorkers(Predicate<String> present) {
    if (heldNow == 0) {
      return;
    }
    synchronized (index) {
      pending.keySet().removeIf(rank -> !present.test(rank.workerId()));
      updateHeldNow();
    }
  }

  /** Held and gap counters (read without the lock: each value is current, together they may be a moment apart). */
  public Counters counters() {
    return new Counters(heldNow, heldTotal, gapCount);
  }

  /** Applies the held events with ids up to {@code upTo}, then those that follow them without a hole. */
  private void releaseThrough(Rank rank, Pending rankPending, long upTo, Tally tally) {
    long gapsBefore = index.gapCount();
    while (!rankPending.events.isEmpty() && rankPending.events.firstKey() <= upTo) {
      Map.Entry<Long, Held> first = rankPending.events.pollFirstEntry();
      index.apply(rank, first.getKey(), first.getValue().event(), rankPending.maxBlocks);
      tally.appliedHeld(first.getValue());
    }
    long declared = index.gapCount() - gapsBefore;
    gapCount += declared;
    tally.gaps += declared;
    releaseRun(rank, rankPending, tally);
  }

  /** Applies held events while the lowest one is the rank's next id. */
  private void releaseRun(Rank rank, Pending rankPending, Tally tally) {
    while (!rankPending.events.isEmpty() && isNext(lastApplied(rank), rankPending.events.firstKey())) {
      Map.Entry<Long, Held> first = rankPending.events.pollFirstEntry();
      index.apply(rank, first.getKey(), first.getValue().event(), rankPending.maxBlocks);
      tally.appliedHeld(first.getValue());
    }
  }

  private static boolean isNext(long last, long id) {
    return last == NO_ID ? id <= FIRST_ID : id == last + 1;
  }

  /** The rank's last applied id in the index, or {@link #NO_ID} when it has none. */
  private long lastApplied(Rank rank) {
    KvIndex events = index.events();
    synchronized (events) {
      RankState state = events.tree().state(rank);
      return state == null || !state.seenEvent ? NO_ID : state.lastEventId;
    }
  }

  private void updateHeldNow() {
    long count = 0;
    for (Pending rankPending : pending.values()) {
      count += rankPending.events.size();
    }
    heldNow = count;
  }

  /** Ranks holding events now (diagnostics and tests). */
  public List<Rank> ranksHolding() {
    synchronized (index) {
      return new ArrayList<>(pending.keySet());
    }
  }
}
