package io.kvrouter.sim.workload;

/**
 * A source of requests over simulated time. Open-loop workloads (a trace) schedule every arrival at the start;
 * closed-loop ones (conversations) schedule a session's next turn when its previous one finishes. A workload is
 * deterministic for its seed, given the same completion times.
 */
public interface Workload {
  /** Where a workload puts its arrivals. */
  @FunctionalInterface
  interface Arrivals {
    void at(long micros, WorkloadRequest request);
  }

  /** The parameters, for the report. */
  String description();

  /** Schedules the first arrivals. */
  void start(Arrivals arrivals);

  /** {@code request} finished (or was rejected) at {@code nowMicros}. */
  default void finished(WorkloadRequest request, long nowMicros, Arrivals arrivals) {}
}
