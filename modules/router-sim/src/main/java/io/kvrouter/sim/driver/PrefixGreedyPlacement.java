package io.kvrouter.sim.driver;

import io.kvrouter.sim.engine.SimRequest;

/**
 * A reference point computed without the router: each request goes to the rank holding the longest cached prefix of
 * it (read from the simulated caches themselves, so never stale), ties to the fewest requests in flight, then the
 * lowest rank. It maximises reuse per request and ignores load.
 */
public final class PrefixGreedyPlacement implements Placement {
  private Fleet fleet;

  @Override
  public String label() {
    return "prefix-greedy (no router)";
  }

  @Override
  public void open(Fleet fleet) {
    this.fleet = fleet;
  }

  @Override
  public Placed place(SimRequest request) {
    int best = -1;
    int bestPrefix = -1;
    int bestInFlight = Integer.MAX_VALUE;
    for (Fleet.Unit unit : fleet.units()) {
      int prefix = unit.rank().cache().cachedPrefix(request.blockHashes(), request.hitLimit());
      int inFlight = unit.rank().inFlight();
      if (prefix > bestPrefix || (prefix == bestPrefix && inFlight < bestInFlight)) {
        best = unit.index();
        bestPrefix = prefix;
        bestInFlight = inFlight;
      }
    }
    return new Placed(best, 0);
  }
}
