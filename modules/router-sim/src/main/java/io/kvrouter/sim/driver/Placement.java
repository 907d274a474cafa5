package io.kvrouter.sim.driver;

import io.kvrouter.sim.engine.KvCacheEvent;
import io.kvrouter.sim.engine.SimRequest;
import java.util.List;

/**
 * Decides which rank serves each request, and hears what a real router would hear from engines and frontends. Calls
 * come one at a time, in simulated-time order.
 */
public interface Placement extends AutoCloseable {
  /** Where a request went; {@code attempt} is the router's fencing token (0 without a router). */
  record Placed(int unit, long attempt) {}

  /** The label in the report. */
  String label();

  /** Registers the fleet; called once before the first request. */
  void open(Fleet fleet);

  /** The unit for {@code request}, or null when it was rejected. */
  Placed place(SimRequest request);

  default void prefillDone(SimRequest request, Placed placed) {}

  default void finished(SimRequest request, Placed placed) {}

  /** Cache events of a unit, in id order. */
  default void kvEvents(Fleet.Unit unit, List<KvCacheEvent> events) {}

  /** Periodic engine load reports (the router's heartbeat). */
  default void reportLoads(Fleet fleet) {}

  @Override
  default void close() {}

}
