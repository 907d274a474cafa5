package io.kvrouter.sim.driver;

import io.kvrouter.sim.engine.KvCacheEvent;
import io.kvrouter.sim.engine.SimRequest;
import io.kvrouter.sim.workload.WorkloadRequest;
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

  /**
   * As {@link #place(SimRequest)}, with the workload's tags of the request ({@code source}); may also answer
   * {@link #QUEUED}: the router holds the request in its admission queue and {@link #settle} will tell where it went.
   */
  default Placed place(SimRequest request, WorkloadRequest source) {
    return place(request);
  }

  /** What {@link #place(SimRequest, WorkloadRequest)} answers for a request the router's admission queue holds. */
  Placed QUEUED = new Placed(-1, 0);

  /** A queued request the router has decided: {@code placed} null when it was rejected. */
  record Late(String requestId, Placed placed) {}

  /**
   * Called after every event: once the router has answered everything sent for it, the queued requests it decided
   * meanwhile, in the order it decided them. Empty for placements that never queue.
   */
  default List<Late> settle() {
    return List.of();
  }

  default void prefillDone(SimRequest request, Placed placed) {}

  default void finished(SimRequest request, Placed placed) {}

  /** Cache events of a unit, in id order. */
  default void kvEvents(Fleet.Unit unit, List<KvCacheEvent> events) {}

  /** Periodic engine load reports (the router's heartbeat). */
  default void reportLoads(Fleet fleet) {}

  @Override
  default void close() {}

}
