package io.kvrouter.core.sequences;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.ActivePrefixSource;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionView;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which sequence-hash prefixes each rank's live bookings hold, refcounted. A sequence hash names its whole prefix,
 * so a rank holding hash i holds hashes 0..i: the matched depth is found by binary search. One writer (the admission
 * actor) changes it; both selection paths read it concurrently. A read racing a write may see a booking half added,
 * which can only make one pick worse, never break the ledger.
 */
public final class ActivePrefixIndex implements ActivePrefixSource {
  private final Map<Rank, ConcurrentHashMap<Long, Integer>> held = new ConcurrentHashMap<>();

  public void add(Rank rank, long[] sequenceHashes) {
    if (sequenceHashes.length == 0) {
      return;
    }
    ConcurrentHashMap<Long, Integer> counts = held.computeIfAbsent(rank, r -> new ConcurrentHashMap<>());
    for (long hash : sequenceHashes) {
      counts.merge(hash, 1, Integer::sum);
    }
  }

  public void remove(Rank rank, long[] sequenceHashes) {
    ConcurrentHashMap<Long, Integer> counts = held.get(rank);
    if (counts == null) {
      return;
    }
    for (long hash : sequenceHashes) {
      counts.computeIfPresent(hash, (h, count) -> count > 1 ? count - 1 : null);
    }
  }

  public void removeWorker(String workerId) {
    held.keySet().removeIf(rank -> rank.workerId().equals(workerId));
  }

  /** How many leading blocks of {@code sequenceHashes} the rank's live bookings hold. */
  public int matchedDepth(Rank rank, long[] sequenceHashes) {
    ConcurrentHashMap<Long, Integer> counts = held.get(rank);
    if (counts == null || counts.isEmpty()) {
      return 0;
    }
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
    if (held.isEmpty()) {
      return;
    }
    for (int i = 0; i < candidates.size(); i++) {
      candidates.setActiveMatched(i, matchedDepth(view.rank(candidates.rankIndex(i)), sequenceHashes));
    }
  }
}
