package io.kvrouter.sim.driver;

import io.kvrouter.sim.engine.EngineRank;
import io.kvrouter.sim.engine.SimEngine;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The engines of one run, with every rank numbered across the fleet. */
public final class Fleet {
  /** A routing unit: (worker, dp rank) and its rank object. */
  public record Unit(int index, SimEngine engine, int dpRank, EngineRank rank) {}

  private final FleetConfig config;
  private final List<SimEngine> engines;
  private final List<Unit> units = new ArrayList<>();
  private final Map<String, Integer> firstUnit = new HashMap<>();

  public Fleet(FleetConfig config) {
    this.config = config;
    this.engines = config.build();
    for (SimEngine engine : engines) {
      firstUnit.put(engine.workerId(), units.size());
      for (int r = 0; r < engine.ranks().size(); r++) {
        units.add(new Unit(units.size(), engine, r, engine.ranks().get(r)));
      }
    }
  }

  public FleetConfig config() {
    return config;
  }

  public List<SimEngine> engines() {
    return engines;
  }

  public List<Unit> units() {
    return units;
  }

  public Unit unit(int index) {
    return units.get(index);
  }

  /** The unit of (worker, dp rank); throws if the router named a rank this fleet does not have. */
  public Unit unit(String workerId, int dpRank) {
    Integer first = firstUnit.get(workerId);
    if (first == null || dpRank < 0 || dpRank >= config.ranksPerEngine()) {
      throw new IllegalStateException("the router chose " + workerId + "/" + dpRank + ", not in the fleet");
    }
    return units.get(first + dpRank);
  }
}
