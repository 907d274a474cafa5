package io.kvrouter.core.testkit;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** An overlap source with no overlaps that records what it was taught: bookings and workers that left. */
public final class RecordingOverlapSource implements KvOverlapSource {
  /** One line per {@code onBooked}: "rank [hashes] @millis". */
  public final List<String> booked = new ArrayList<>();
  public final List<String> removedWorkers = new ArrayList<>();

  @Override
  public void overlaps(SelectionView view, long[] sequenceHashes, Candidates candidates) {}

  @Override
  public void onBooked(Rank rank, long[] sequenceHashes, long nowMillis) {
    booked.add(rank + " " + Arrays.toString(sequenceHashes) + " @" + nowMillis);
  }

  @Override
  public void removeWorker(String workerId) {
    removedWorkers.add(workerId);
  }
}
