package io.kvrouter.core.testkit;

import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.policy.PickerSlot;
import io.kvrouter.core.selection.SelectionView;
import java.util.HashMap;
import java.util.Map;

/** Views derived from a published one, for tests and benchmarks. */
public final class Views {
  private Views() {}

  /** The same view (same cells, version, sources) with another picker. */
  public static SelectionView withPicker(SelectionView view, PickerSlot picker) {
    Map<Rank, LoadCell> cells = new HashMap<>();
    for (int i = 0; i < view.rankCount(); i++) {
      cells.put(view.rank(i), view.cell(i));
    }
    return new SelectionView(view.model(), view.epoch(), view.version(), view.workers().values(), cells, view.policy(), picker,
        view.overlapSource(), view.activePrefix(), view.heartbeatTimeoutMillis());
  }
}
