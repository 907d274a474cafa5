package io.kvrouter.sim.driver;

import io.kvrouter.sim.workload.OverloadWorkload;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The overload benchmark: the same overloading workload ({@link OverloadWorkload}) through the router once per
 * admission setup, side by side, each on a fresh fleet and model: no queue (every Book admitted at once, the engines
 * queue), the router's queue in FCFS and in WSPT order, the two tenants as policy classes sharing 3:1 by deficit
 * round robin, and strict tiers without and with aging. Every row uses the kv policy; the queue's busy threshold is
 * a rank's booked prefill tokens above {@code max_num_batched_tokens} ({@code queue_threshold_frac = 1}).
 */
public final class Overload {
  /** One row: its label, the policy parameters on top of kv's, and the tags its Books carry. */
  public record Row(String label, Map<String, String> parameters, RouterPlacement.Tagging tagging) {}

  private Overload() {}

  /** The rows, {@code agingMillis} for the aging row. */
  public static List<Row> rows(long agingMillis) {
    Map<String, String> queue = Map.of("queue_threshold_frac", "1", "max_pending", "100000");
    List<Row> rows = new ArrayList<>();
    rows.add(new Row("no queue (engines queue)", Map.of(), RouterPlacement.Tagging.NONE));
    rows.add(new Row("FCFS", queue, RouterPlacement.Tagging.NONE));
    rows.add(new Row("WSPT", with(queue, "queue_policy", "wspt"), RouterPlacement.Tagging.NONE));
    rows.add(new Row("FCFS, tenants a:b as classes, quanta 3:1",
        with(with(queue, "class.a", "quantum=3072"), "class.b", "quantum=1024"),
        new RouterPlacement.Tagging(true, false)));
    rows.add(new Row("FCFS, strict tiers, no aging", queue, new RouterPlacement.Tagging(false, true)));
    rows.add(new Row(String.format(Locale.ROOT, "FCFS, strict tiers, aging %d s", agingMillis / 1000),
        with(queue, "queue_aging_ms", Long.toString(agingMillis)), new RouterPlacement.Tagging(false, true)));
    return rows;
  }

  private static Map<String, String> with(Map<String, String> base, String key, String value) {
    Map<String, String> out = new LinkedHashMap<>(base);
    out.put(key, value);
    return out;
  }

  /** Runs every row in order on the router {@code clients} reach, on virtual time. */
  public static List<RunResult> run(FleetConfig fleet, OverloadWorkload.Params workload, List<Row> rows, long seed,
      RouterClients clients, Pacer pacer, Simulation.Progress progress) {
    List<RunResult> results = new ArrayList<>();
    for (int i = 0; i < rows.size(); i++) {
      Row row = rows.get(i);
      Map<String, String> parameters = new LinkedHashMap<>();
      parameters.put("seed", Long.toString(seed));
      parameters.putAll(row.parameters());
      Placement placement = new RouterPlacement(clients, row.label(), "sim/overload/row-" + i, "kv", parameters,
          true, row.tagging());
      Simulation simulation = new Simulation(new Fleet(fleet), new OverloadWorkload(workload), placement, pacer,
          progress, Simulation.Settings.defaults());
      results.add(simulation.run());
    }
    return results;
  }
}
