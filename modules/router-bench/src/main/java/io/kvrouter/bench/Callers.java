package io.kvrouter.bench;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.AbstractHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.IntCountsHistogram;

/**
 * Concurrent callers run as tasks on a fixed pool: what JMH cannot express (its threads are the callers, here 256
 * callers share 4 threads, and an asynchronous caller issues its next ask from the completion of the previous one).
 * A synchronous caller runs a slice of calls per turn on a pool thread, then queues its next turn behind the other
 * callers; a chained caller hops back to the pool through an explicit executor (no pool thread ever blocks on a
 * future). Every run is bounded in count and in time.
 *
 * <p>A timed run makes a fixed number of calls and records each one's latency; an untimed run reads no clock per
 * call (a clock read costs 20–40 ns on this virtual machine, a fifth of an inline Select) and lasts a fixed window,
 * so that a fast path is measured over as long as a slow one: calls/s = calls over wall time.
 */
final class Callers {
  private Callers() {}

  @FunctionalInterface
  interface SyncCall {
    Object call(int caller);
  }

  @FunctionalInterface
  interface AsyncCall {
    CompletionStage<?> call(int caller);
  }

  /** {@code cpuNanos}: the whole process's CPU time during the run (every thread: callers, actors, GC, JIT). */
  record Result(int callers, long calls, long wallNanos, long cpuNanos, AbstractHistogram latency, long failures) {
    double callsPerSecond() {
      return calls * 1e9 / wallNanos;
    }

    double cpuNanosPerCall() {
      return cpuNanos / (double) calls;
    }

    /** CPUs the process kept busy on average: below the CPU count, the machine's other load took the rest. */
    double cores() {
      return cpuNanos / (double) wallNanos;
    }

    /** Two untimed runs as one: their calls over their wall times added up. */
    Result plus(Result other) {
      return new Result(callers, calls + other.calls, wallNanos + other.wallNanos, cpuNanos + other.cpuNanos, null,
          failures + other.failures);
    }

    double p50() {
      return latency.getValueAtPercentile(50);
    }

    double p99() {
      return latency.getValueAtPercentile(99);
    }
  }

  private static final long MAX_NANOS = 30_000_000_000L;

  /** One latency histogram per caller (ns, 1 ns … 30 s, 3 significant digits), reused run after run. */
  static AbstractHistogram[] histograms(int callers) {
    AbstractHistogram[] out = new AbstractHistogram[callers];
    for (int i = 0; i < callers; i++) {
      out[i] = new IntCountsHistogram(1, MAX_NANOS, 3);
    }
    return out;
  }

  private static void record(AbstractHistogram h, long nanos) {
    h.recordValue(Math.max(1, Math.min(MAX_NANOS, nanos)));
  }

  /** The run with the median calls/s (the upper median for an even count). */
  static Result median(List<Result> runs) {
    List<Result> sorted = new ArrayList<>(runs);
    sorted.sort(Comparator.comparingDouble(Result::callsPerSecond));
    return sorted.get(sorted.size() / 2);
  }

  /** "min–max" calls/s over the runs. */
  static String range(List<Result> runs) {
    double min = Double.MAX_VALUE;
    double max = 0;
    for (Result r : runs) {
      min = Math.min(min, r.callsPerSecond());
      max = Math.max(max, r.callsPerSecond());
    }
    return Report.rate(min) + "–" + Report.rate(max);
  }

  /** Caller {@code caller}'s part of {@code total} calls split as evenly as possible. */
  static int share(long total, int callers, int caller) {
    return (int) Math.min(Integer.MAX_VALUE, total / callers + (caller < total % callers ? 1 : 0));
  }

  /** {@code total} synchronous calls split over the callers, each caller's share in one turn, every call timed. */
  static Result runSync(Executor pool, int callers, int total, AbstractHistogram[] latency, long capMillis,
      SyncCall op) {
    Run run = new Run(callers, latency, capMillis, capMillis);
    for (int c = 0; c < callers; c++) {
      int calls = share(total, callers, c);
      pool.execute(new SyncCaller(c, calls, calls, op, pool, run));
    }
    return run.finish();
  }

  /**
   * Synchronous callers for {@code windowMillis}, untimed: each turn makes the caller's share of {@code slice} calls
   * (the same turn as {@link #runSync} with {@code total = slice}), then queues the next turn.
   */
  static Result runSyncFor(Executor pool, int callers, int slice, long windowMillis, long maxCalls, SyncCall op) {
    Run run = new Run(callers, null, windowMillis, windowMillis);
    for (int c = 0; c < callers; c++) {
      pool.execute(new SyncCaller(c, share(slice, callers, c), share(maxCalls, callers, c), op, pool, run));
    }
    return run.finish();
  }

  /** {@code total} chained asynchronous calls split over the callers, every call timed. */
  static Result runChained(Executor pool, int callers, int total, AbstractHistogram[] latency, long capMillis,
      AsyncCall op) {
    Run run = new Run(callers, latency, capMillis, capMillis);
    for (int c = 0; c < callers; c++) {
      pool.execute(new Chain(c, share(total, callers, c), op, pool, run));
    }
    return run.finish();
  }

  /** Chained asynchronous callers for {@code windowMillis}, untimed. */
  static Result runChainedFor(Executor pool, int callers, long windowMillis, long maxCalls, AsyncCall op) {
    Run run = new Run(callers, null, windowMillis, windowMillis);
    for (int c = 0; c < callers; c++) {
      pool.execute(new Chain(c, share(maxCalls, callers, c), op, pool, run));
    }
    return run.finish();
  }

  /**
   * One run's shared bookkeeping: per-caller histograms ({@code latency} null: untimed), the finish latch, the
   * counters, the deadline after which callers stop, and the process CPU time at the start.
   */
  private static final class Run {
    private static final com.sun.management.OperatingSystemMXBean OS =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    final int callers;
    final AbstractHistogram[] latency;
    final long capMillis;
    final CountDownLatch done;
    final AtomicLong failures = new AtomicLong();
    final AtomicLong completed = new AtomicLong();
    final long deadline;
    final long start;
    final long cpuStart;

    Run(int callers, AbstractHistogram[] latency, long stopAfterMillis, long capMillis) {
      this.callers = callers;
      this.latency = latency;
      this.capMillis = capMillis;
      if (latency != null) {
        for (int i = 0; i < callers; i++) {
          latency[i].reset();
        }
      }
      this.done = new CountDownLatch(callers);
      this.cpuStart = OS.getProcessCpuTime();
      this.start = System.nanoTime();
      this.deadline = start + TimeUnit.MILLISECONDS.toNanos(stopAfterMillis);
    }

    AbstractHistogram histogram(int caller) {
      return latency == null ? null : latency[caller];
    }

    /** Waits for every caller; calls/s over wall time, latency merged when timed. */
    Result finish() {
      try {
        // callers stop themselves at the deadline; allow a little slack for in-flight calls to finish
        if (!done.await(capMillis + 15_000, TimeUnit.MILLISECONDS)) {
          throw new IllegalStateException("callers did not finish within " + capMillis + " ms + 15 s");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      long wall = System.nanoTime() - start;
      long cpu = OS.getProcessCpuTime() - cpuStart;
      AbstractHistogram merged = null;
      if (latency != null) {
        merged = new Histogram(1, MAX_NANOS, 3);
        for (int i = 0; i < callers; i++) {
          merged.add(latency[i]);
        }
      }
      return new Result(callers, completed.get(), wall, cpu, merged, failures.get());
    }
  }

  /** A synchronous caller: {@code slice} calls per turn until {@code remaining} calls are made or the deadline. */
  private static final class SyncCaller implements Runnable {
    private final int caller;
    private final int slice;
    private final SyncCall op;
    private final Executor pool;
    private final Run run;
    private int remaining;

    SyncCaller(int caller, int slice, int calls, SyncCall op, Executor pool, Run run) {
      this.caller = caller;
      this.slice = Math.max(1, slice);
      this.remaining = calls;
      this.op = op;
      this.pool = pool;
      this.run = run;
    }

    @Override
    public void run() {
      AbstractHistogram h = run.histogram(caller);
      int turn = Math.min(slice, remaining);
      int k = 0;
      boolean failed = false;
      try {
        for (; k < turn; k++) {
          long t0 = h == null ? 0 : System.nanoTime();
          Object result = op.call(caller);
          if (h != null) {
            record(h, System.nanoTime() - t0);
          }
          if (result == null) {
            run.failures.incrementAndGet();
          }
        }
      } catch (RuntimeException e) {
        run.failures.incrementAndGet();
        failed = true;
      }
      remaining = failed ? 0 : remaining - k;
      run.completed.addAndGet(k);
      if (remaining > 0 && System.nanoTime() < run.deadline) {
        pool.execute(this);
      } else {
        run.done.countDown();
      }
    }
  }

  /** A chained caller: the next call starts from the completion of the previous one, back on the pool. */
  private static final class Chain implements Runnable {
    private final int caller;
    private final AbstractHistogram latency;
    private final AsyncCall op;
    private final Executor pool;
    private final Run run;
    private int remaining;
    private long t0;

    Chain(int caller, int calls, AsyncCall op, Executor pool, Run run) {
      this.caller = caller;
      this.remaining = calls;
      this.latency = run.histogram(caller);
      this.op = op;
      this.pool = pool;
      this.run = run;
    }

    @Override
    public void run() {
      if (remaining <= 0) {
        run.done.countDown();
        return;
      }
      if (latency != null) {
        t0 = System.nanoTime();
      }
      CompletionStage<?> stage;
      try {
        stage = op.call(caller);
      } catch (RuntimeException e) {
        run.failures.incrementAndGet();
        run.done.countDown();
        return;
      }
      stage.whenCompleteAsync(this::completed, pool);
    }

    private void completed(Object result, Throwable failure) {
      // an ask costs microseconds: one clock read per call is within noise here
      long t1 = System.nanoTime();
      if (latency != null) {
        record(latency, t1 - t0);
      }
      run.completed.incrementAndGet();
      if (failure != null) {
        run.failures.incrementAndGet();
      }
      if (--remaining > 0 && t1 < run.deadline) {
        run();
      } else {
        run.done.countDown();
      }
    }
  }
}
