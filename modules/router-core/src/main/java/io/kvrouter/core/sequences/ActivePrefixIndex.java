package io.kvrouter.core.sequences;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.ActivePrefixSource;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionView;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jctools.maps.NonBlockingHashMapLong;

/**
 * Which sequence-hash prefixes each rank's live bookings hold, refcounted. A sequence hash names its whole prefix,
 * so a rank holding hash i holds hashes 0..i: the matched depth is found by binary search. One writer (the admission
 * actor) changes it; both selection paths read it concurrently. A read racing a write may see a booking half added,
 * which can only make one pick worse, never break the ledger.
 *
 * <p>Each rank's counts live in a lock-free map with primitive {@code long} keys (JCTools), so neither the Book's
 * add, the Release's remove nor a Select's probes box a hash; counts up to 127 are the JDK's cached Integers.
 */
public final class ActivePrefixIndex implements ActivePrefixSource {
  private final Map<Rank, Held> held = new ConcurrentHashMap<>();
  /** Bookings with blocks in the index, over all ranks: with none, a selection probes nothing. */
  private volatile int liveBookings;
  /** Bumped when a rank's entry is created or dropped, so readers can cache a view's rank → entry resolution. */
  private volatile long epoch;
  private volatile Resolved resolved;

  private record Resolved(SelectionView view, long epoch, Held[] byRankIndex) {}

  /** One rank's refcounted hashes and how many live bookings put them there. */
  private static final class Held {
    final NonBlockingHashMapLong<Integer> counts = new NonBlockingHashMapLong<>();
    volatile int bookings;
  }

  /** Counts one more booking holding {@code sequenceHashes} on {@code rank}. Writer only. */
  public void add(Rank rank, long[] sequenceHashes) {
    if (sequenceHashes.length == 0) {
      return;
    }
    Held rankHeld = held.get(rank);
    if (rankHeld == null) {
      rankHeld = new Held();
      held.put(rank, rankHeld);
      epoch++;
    }
    NonBlockingHashMapLong<Integer> counts = rankHeld.counts;
    rankHeld.bookings++; // single writer: plain increments of volatiles are safe
    liveBookings++;
    for (long hash : sequenceHashes) {
      Integer count = counts.get(hash);
      counts.put(hash, Integer.valueOf(count == null ? 1 : count + 1));
    }
  }

  /** Counts one booking fewer; a hash no booking holds any more is dropped. Writer only. */
  public void remove(Rank rank, long[] sequenceHashes) {
    Held rankHeld = held.get(rank);
    if (rankHeld == null || sequenceHashes.length == 0) {
      return;
    }
    NonBlockingHashMapLong<Integer> counts = rankHeld.counts;
    rankHeld.bookings--;
    liveBookings--;
    for (long hash : sequenceHashes) {
      Integer count = counts.get(hash);
      if (count == null) {
        continue;
      }
      if (count > 1) {
        counts.put(hash, Integer.valueOf(count - 1));
      } else {
        counts.remove(hash);
      }
    }
  }

  public void removeWorker(String workerId) {
    held.entrySet().removeIf(e -> {
      if (e.getKey().workerId().equals(workerId)) {
        liveBookings -= e.getValue().bookings;
        return true;
      }
      return false;
    });
    epoch++;
  }

  /** How many leading blocks of {@code sequenceHashes} the rank's live bookings hold. */
  public int matchedDepth(Rank rank, long[] sequenceHashes) {
    return matchedDepth(held.get(rank), sequenceHashes);
  }

  private static int matchedDepth(Held rankHeld, long[] sequenceHashes) {
    if (rankHeld == null || rankHeld.bookings <= 0) {
      return 0;
    }
    NonBlockingHashMapLong<Integer> counts = rankHeld.counts;
    int low = 0;
    int high = sequenceHashes.length;
    while (low < high) {
      int mid = (low + high + 1) >>> 1;
      if (counts.containsKey(sequenceHashes[mid - 1])) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    return low;
  }

  @Override
  public void matched(SelectionView view, long[] sequenceHashes, Candidates candidates) {
    if (liveBookings <= 0) {
      return;
    }
    Held[] byRankIndex = resolve(view);
    for (int i = 0; i < candidates.size(); i++) {
      candidates.setActiveMatched(i, matchedDepth(byRankIndex[candidates.rankIndex(i)], sequenceHashes));
    }
  }

  /** The view's ranks' entries by rank index, cached per view and epoch (views change only on registrations). */
  private Held[] resolve(SelectionView view) {
    long current = epoch;
    Resolved cached = resolved;
    if (cached != null && cached.view == view && cached.epoch == current) {
      return cached.byRankIndex;
    }
    // a resolution racing a write may miss an entry just created; the changed epoch makes the next call resolve again
    Held[] byRankIndex = new Held[view.rankCount()];
    for (int i = 0; i < byRankIndex.length; i++) {
      byRankIndex[i] = held.get(view.rank(i));
    }
    resolved = new Resolved(view, current, byRankIndex);
    return byRankIndex;
  }
}
