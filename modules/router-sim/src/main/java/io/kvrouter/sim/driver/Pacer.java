package io.kvrouter.sim.driver;

import io.kvrouter.core.admission.Clock;
import java.util.concurrent.locks.LockSupport;

/** How simulated time relates to the router's time: jumped (virtual) or waited for (wall clock). */
public interface Pacer {
  /** Called before handling an event at {@code simMicros} (never decreasing within a run). */
  void advanceTo(long simMicros);

  /** Starts a run at simulated time 0. */
  void startRun();

  /** For the report. */
  String mode();

  /**
   * Virtual time: the simulation owns the clock and the in-process router reads it ({@code Main.init(config,
   * clock)}), so leases, heartbeats and the approximate index's TTL follow simulated time. Each run starts a day
   * after the previous one's start, far past every lease and TTL of the earlier run.
   */
  final class Virtual implements Pacer, Clock {
    private static final long EPOCH_MILLIS = 1_767_225_600_000L; // 2026-01-01T00:00Z: a fixed start, for determinism
    private static final long RUN_SPACING_MILLIS = 86_400_000L;
    private volatile long runStartMillis = EPOCH_MILLIS - RUN_SPACING_MILLIS;
    private volatile long nowMicros;

    @Override
    public void startRun() {
      runStartMillis += Math.max(RUN_SPACING_MILLIS, nowMicros / 1000 + RUN_SPACING_MILLIS);
      nowMicros = 0;
    }

    @Override
    public void advanceTo(long simMicros) {
      nowMicros = simMicros;
    }

    @Override
    public long millis() {
      return runStartMillis + nowMicros / 1000;
    }

    @Override
    public String mode() {
      return "virtual time (in-process router on the simulation's clock)";
    }
  }

  /** Wall-clock time against a running router: each event waits until its simulated time has really passed. */
  final class Wall implements Pacer {
    private long startNanos;

    @Override
    public void startRun() {
      startNanos = System.nanoTime();
    }

    @Override
    public void advanceTo(long simMicros) {
      long due = startNanos + simMicros * 1000;
      long wait;
      while ((wait = due - System.nanoTime()) > 0) {
        LockSupport.parkNanos(wait);
      }
    }

    @Override
    public String mode() {
      return "wall clock (running router)";
    }
  }
}
