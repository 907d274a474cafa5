package io.kvrouter.bench;

import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.AbstractHistogram;

/**
 * Concurrent callers run as tasks on a fixed pool. A synchronous caller loops its share inside one task; a chained
 * caller issues its next asynchronous call from the completion of the previous one, hopping back to the pool through
 * an explicit executor (it never blocks a pool thread on a future). Every run is bounded in count and in time.
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

  record Result(int callers, long calls, long wallNanos, AbstractHistogram latency, long failures) {
    double callsPerSecond() {
      return calls * 1e9 / wallNanos;
    }

    double p50() {
      return latency.getValueAtPercentile(50);
    }

    double p99() {
      return latency.getValueAtPercentile(99);
    }
  }

  /** The run with the median calls/s (the upper median for an even count). */
  static Result median(java.util.List<Result> runs) {
    java.util.List<Result> sorted = new java.util.ArrayList<>(runs);
    sorted.sort(java.util.Comparator.comparingDouble(Result::callsPerSecond));
    return sorted.get(sorted.size() / 2);
  }

  /** "min–max" calls/s over the runs. */
  static String range(java.util.List<Result> runs) {
    double min = Double.MAX_VALUE;
    double max = 0;
    for (Result r : runs) {
      min = Math.min(min, r.callsPerSecond());
      max = Math.max(max, r.callsPerSecond());
    }
    return Report.rate(min) + "–" + Report.rate(max);
  }

  static int share(int total, int callers, int caller) {
    return total / callers + (caller < total % callers ? 1 : 0);
  }

  /**
   * The same callers with no clock read per call: a wall-clock read costs 20–40 ns on this virtual machine, as much
   * as a tenth of an inline Select, so calls/s is taken from this pass and latency from the timed one.
   */
  static Result runSyncUntimed(Executor pool, int callers, int total, long capMillis, SyncCall op) {
    return sync(pool, callers, total, null, capMillis, op);
  }

  static Result runSync(Executor pool, int callers, int total, AbstractHistogram[] latency, long capMillis,
      SyncCall op) {
    return sync(pool, callers, total, latency, capMillis, op);
  }

  /**
   * One run's shared bookkeeping: per-caller histograms ({@code latency} null: untimed), the finish latch, the
   * counters and the deadline.
   */
  private static final class Run {
    final int callers;
    final AbstractHistogram[] latency;
    final long capMillis;
    final CountDownLatch done;
    final AtomicLong failures = new AtomicLong();
    final AtomicLong completed = new AtomicLong();
    final long deadline;
    final long start;

    Run(int callers, AbstractHistogram[] latency, long capMillis) {
      this.callers = callers;
      this.latency = latency;
      this.capMillis = capMillis;
      if (latency != null) {
        for (int i = 0; i < callers; i++) {
          latency[i].reset();
        }
      }
      this.done = new CountDownLatch(callers);
      this.deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(capMillis);
      this.start = System.nanoTime();
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
      if (latency == null) {
        return new Result(callers, completed.get(), wall, null, failures.get());
      }
      AbstractHistogram merged = Latency.merge(latency, callers);
      return new Result(callers, merged.getTotalCount(), wall, merged, failures.get());
    }
  }

  private static Result sync(Executor pool, int callers, int total, AbstractHistogram[] latency, long capMillis,
      SyncCall op) {
    Run run = new Run(callers, latency, capMillis);
    for (int c = 0; c < callers; c++) {
      int caller = c;
      int calls = share(total, callers, caller);
      AbstractHistogram h = run.histogram(caller);
      pool.execute(() -> {
        int k = 0;
        try {
          while (k < calls) {
            long t0 = h == null ? 0 : System.nanoTime();
            Object result = op.call(caller);
            long t1 = h == null ? 0 : System.nanoTime();
            k++;
            if (result == null) {
              run.failures.incrementAndGet();
            }
            if (h != null) {
              Latency.record(h, t1 - t0);
            }
            if ((k & 1023) == 0 && (h == null ? System.nanoTime() : t1) > run.deadline) {
              break;
            }
          }
        } catch (RuntimeException e) {
          run.failures.incrementAndGet();
        } finally {
          run.completed.addAndGet(k);
          run.done.countDown();
        }
      });
    }
    return run.finish();
  }

  static Result runChained(Executor pool, int callers, int total, AbstractHistogram[] latency, long capMillis,
      AsyncCall op) {
    return chained(pool, callers, total, latency, capMillis, op);
  }

  /** As {@link #runChained} with no clock read per call (see {@link #runSyncUntimed}). */
  static Result runChainedUntimed(Executor pool, int callers, int total, long capMillis, AsyncCall op) {
    return chained(pool, callers, total, null, capMillis, op);
  }

  private static Result chained(Executor pool, int callers, int total, AbstractHistogram[] latency, long capMillis,
      AsyncCall op) {
    Run run = new Run(callers, latency, capMillis);
    for (int c = 0; c < callers; c++) {
      pool.execute(new Chain(c, share(total, callers, c), op, pool, run));
    }
    return run.finish();
  }

  private static final class Chain implements Runnable {
    private final int caller;
    private final AbstractHistogram latency;
    private final AsyncCall op;
    private final Executor pool;
    private final Run shared;
    private int remaining;
    private int calls;
    private long t0;

    Chain(int caller, int calls, AsyncCall op, Executor pool, Run shared) {
      this.caller = caller;
      this.remaining = calls;
      this.latency = shared.histogram(caller);
      this.op = op;
      this.pool = pool;
      this.shared = shared;
    }

    @Override
    public void run() {
      if (remaining <= 0) {
        shared.done.countDown();
        return;
      }
      if (latency != null) {
        t0 = System.nanoTime();
      }
      CompletionStage<?> stage;
      try {
        stage = op.call(caller);
      } catch (RuntimeException e) {
        shared.failures.incrementAndGet();
        shared.done.countDown();
        return;
      }
      stage.whenCompleteAsync(this::completed, pool);
    }

    private void completed(Object result, Throwable failure) {
      boolean inTime = true;
      if (latency != null) {
        long t1 = System.nanoTime();
        Latency.record(latency, t1 - t0);
        inTime = t1 < shared.deadline;
      } else if ((++calls & 1023) == 0) {
        inTime = System.nanoTime() < shared.deadline;
      }
      shared.completed.incrementAndGet();
      if (failure != null) {
        shared.failures.incrementAndGet();
      }
      if (--remaining > 0 && inTime) {
        run();
      } else {
        shared.done.countDown();
      }
    }
  }
}
