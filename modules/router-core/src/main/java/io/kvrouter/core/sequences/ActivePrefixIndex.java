package io.kvrouter.core.sequences;

import io.kvrouter.core.hashing.PrefixClosed;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.ActivePrefixSource;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.RankResolution;
import io.kvrouter.core.selection.SelectionView;
import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntPredicate;

/**
 * Which sequence-hash prefixes each rank's live bookings hold, refcounted. A sequence hash names its whole prefix,
 * so a rank holding hash i holds hashes 0..i: the matched depth is found by binary search. One writer (the admission
 * actor) changes it; both selection paths read it concurrently. A read racing a write may see a booking half added,
 * which can only make one pick worse, never break the ledger.
 *
 * <p>Bookings are keyed by their attempt (unique per model): adding an attempt already held, or removing one not
 * held, changes nothing, so a repeated remove can never take away another booking's blocks.
 *
 * <p>Each rank's counts live in a {@link SingleWriterLongCounts}: primitive keys and counts, no allocation on the
 * Book's add, the Release's remove or a Select's probes, and no atomic instruction on the probes' path.
 */
public final class ActivePrefixIndex implements ActivePrefixSource {
  private final Map<Rank, Held> held = new ConcurrentHashMap<>();
  /** Bookings with blocks in the index, over all ranks: with none, a selection probes nothing. */
  private volatile int liveBookings;
  /** Bumped when a rank's entry is created or dropped (see {@link RankResolution}). */
  private volatile long epoch;
  private final RankResolution<Held> resolution = new RankResolution<>(held::get, Held[]::new);

  /** One rank's refcounted hashes and the live bookings (by attempt) that put them there. */
  private static final class Held {
    final SingleWriterLongCounts counts = new SingleWriterLongCounts();
    /** Writer only. */
    final Long2ObjectOpenHashMap<long[]> bookings = new Long2ObjectOpenHashMap<>();
    volatile int bookingCount;
  }

  /** Counts booking {@code attempt} as holding {@code sequenceHashes} on {@code rank}. Writer only. */
  public void add(Rank rank, long attempt, long[] sequenceHashes) {
    if (sequenceHashes.length == 0) {
      return;
    }
    Held rankHeld = held.get(rank);
    if (rankHeld == null) {
      rankHeld = new Held();
      held.put(rank, rankHeld);
      epoch++;
    }
    if (rankHeld.bookings.putIfAbsent(attempt, sequenceHashes) != null) {
      return;
    }
    SingleWriterLongCounts counts = rankHeld.counts;
    rankHeld.bookingCount++; // single writer: plain increments of volatiles are safe
    liveBookings++;
    for (long hash : sequenceHashes) {
      counts.increment(hash);
    }
  }

  /** Drops booking {@code attempt}; a hash no booking holds any more is dropped. Writer only. */
  public void remove(Rank rank, long attempt) {
    Held rankHeld = held.get(rank);
    long[] sequenceHashes = rankHeld == null ? null : rankHeld.bookings.remove(attempt);
    if (sequenceHashes == null) {
      return;
    }
    SingleWriterLongCounts counts = rankHeld.counts;
    rankHeld.bookingCount--;
    liveBookings--;
    for (long hash : sequenceHashes) {
      counts.decrement(hash);
    }
  }

  public void removeWorker(String workerId) {
    held.entrySet().removeIf(e -> {
      if (e.getKey().workerId().equals(workerId)) {
        liveBookings -= e.getValue().bookingCount;
        return true;
      }
      return false;
    });
    epoch++;
  }

  /** How many leading blocks of {@code sequenceHashes} the rank's live bookings hold. */
  public int matchedDepth(Rank rank, long[] sequenceHashes) {
    return new Probe(sequenceHashes).depthOn(held.get(rank));
  }

  @Override
  public void matched(SelectionView view, long[] sequenceHashes, Candidates candidates) {
    if (liveBookings <= 0) {
      return;
    }
    Held[] byRankIndex = resolution.resolve(view, epoch);
    Probe probe = new Probe(sequenceHashes);
    for (int i = 0; i < candidates.size(); i++) {
      candidates.setActiveMatched(i, probe.depthOn(byRankIndex[candidates.rankIndex(i)]));
    }
  }

  /** One request's membership probe, pointed at each rank's counts in turn: one allocation per Select, not per rank. */
  private static final class Probe implements IntPredicate {
    private final long[] sequenceHashes;
    private SingleWriterLongCounts counts;

    Probe(long[] sequenceHashes) {
      this.sequenceHashes = sequenceHashes;
    }

    int depthOn(Held rankHeld) {
      if (rankHeld == null || rankHeld.bookingCount <= 0) {
        return 0;
      }
      counts = rankHeld.counts;
      return PrefixClosed.heldDepth(sequenceHashes.length, this);
    }

    @Override
    public boolean test(int block) {
      return counts.contains(sequenceHashes[block]);
    }
  }
}
