package io.kvrouter.core.indexer;

import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.policy.PolicyConfig;
import io.kvrouter.core.selection.ActivePrefixSource;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.Requests;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Drives a {@link KvOverlapSource} the way the selection path does (a real view, candidates filled by the load
 * projection), using only the selection package's public API. No picker: the overlap source never picks.
 */
final class ViewFixture {
  final SelectionView view;

  /** @param workers worker id → dp size (dp ranks start at 0) */
  ViewFixture(KvOverlapSource source, Map<String, Integer> workers) {
    List<WorkerConfig> configs = new ArrayList<>();
    Map<Rank, LoadCell> cells = new HashMap<>();
    for (Map.Entry<String, Integer> w : workers.entrySet()) {
      WorkerConfig config =
          new WorkerConfig(w.getKey(), 0, w.getValue(), 8192, 100_000, 16, "", "", WorkerRole.AGGREGATED);
      configs.add(config);
      for (int r = 0; r < w.getValue(); r++) {
        cells.put(config.rank(r), new LoadCell());
      }
    }
    this.view = new SelectionView("m", 1, 1, configs, cells, PolicyConfig.defaults(),
        null, source, ActivePrefixSource.NONE, 0);
  }

  static Map<String, Integer> workers(Object... idAndDpSize) {
    Map<String, Integer> out = new LinkedHashMap<>();
    for (int i = 0; i < idAndDpSize.length; i += 2) {
      out.put((String) idAndDpSize[i], (Integer) idAndDpSize[i + 1]);
    }
    return out;
  }

  /** Runs the view's overlap source for {@code hashes} into {@code scratch} and returns the overlaps by rank. */
  Map<Rank, TieredOverlap> overlaps(long[] hashes, Candidates scratch) {
    LoadProjection.projectWorkerLoads(view, Requests.of("m", "r", Math.max(1, hashes.length * 16)), scratch,
        0);
    view.overlapSource().overlaps(view, hashes, scratch);
    Map<Rank, TieredOverlap> out = new HashMap<>();
    for (int i = 0; i < scratch.size(); i++) {
      out.put(view.rank(scratch.rankIndex(i)),
          new TieredOverlap(scratch.deviceOverlap(i), scratch.hostOverlap(i), scratch.diskOverlap(i)));
    }
    return out;
  }

  Map<Rank, TieredOverlap> overlaps(long[] hashes) {
    return overlaps(hashes, new Candidates());
  }
}
