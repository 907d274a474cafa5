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

  /** {@code latency} null: untimed, the clock is read only every 1,024 calls for the deadline. */
  private static Result sync(Executor pool, int callers, int total, AbstractHistogram[] latency, long capMillis,
      SyncCall op) {
    if (latency != null) {
      for (int i = 0; i < callers; i++) {
        latency[i].reset();
      }
    }
    CountDownLatch done = new CountDownLatch(callers);
    AtomicLong failures = new AtomicLong();
    AtomicLong completed = new AtomicLong();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(capMillis);
    long start = System.nanoTime();
    for (int c = 0; c < callers; c++) {
      int caller = c;
      int calls = share(total, callers, caller);
      AbstractHistogram h = latency == null ? null : latency[caller];
      pool.execute(() -> {
        int k = 0;
        try {
          while (k < calls) {
            long t0 = h == null ? 0 : System.nanoTime();
            Object result = op.call(caller);
            long t1 = h == null ? 0 : System.nanoTime();
            k++;
            if (result == null) {
              failures.incrementAndGet();
            }
            if (h != null) {
              Latency.record(h, t1 - t0);
            }
            if ((k & 1023) == 0 && (h == null ? System.nanoTime() : t1) > deadline) {
              break;
            }
          }
        } catch (RuntimeException e) {
          failures.incrementAndGet();
        } finally {
          completed.addAndGet(k);
          done.countDown();
        }
      });
    }
    await(done, capMillis);
    long wall = System.nanoTime() - start;
    if (latency == null) {
      return new Result(callers, completed.get(), wall, null, failures.get());
    }
    AbstractHistogram merged = Latency.merge(latency, callers);
    return new Result(callers, merged.getTotalCount(), wall, merged, failures.get());
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
    if (latency != null) {
      for (int i = 0; i < callers; i++) {
        latency[i].reset();
      }
    }
    CountDownLatch done = new CountDownLatch(callers);
    AtomicLong failures = new AtomicLong();
    AtomicLong completed = new AtomicLong();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(capMillis);
    long start = System.nanoTime();
    for (int c = 0; c < callers; c++) {
      Chain chain = new Chain(c, share(total, callers, c), latency == null ? null : latency[c], op, pool, done,
          failures, completed, deadline);
      pool.execute(chain);
    }
    await(done, capMillis);
    long wall = System.nanoTime() - start;
    if (latency == null) {
      return new Result(callers, completed.get(), wall, null, failures.get());
    }
    AbstractHistogram merged = Latency.merge(latency, callers);
    return new Result(callers, merged.getTotalCount(), wall, merged, failures.get());
  }

  private static void await(CountDownLatch done, long capMillis) {
    try {
      // callers stop themselves at the deadline; allow a little slack for in-flight calls to finish
      if (!done.await(capMillis + 15_000, TimeUnit.MILLISECONDS)) {
        throw new IllegalStateException("callers did not finish within " + capMillis + " ms + 15 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static final class Chain implements Runnable {
    private final int caller;
    private final AbstractHistogram latency;
    private final AsyncCall op;
    private final Executor pool;
    private final CountDownLatch done;
    private final AtomicLong failures;
    private final AtomicLong completed;
    private final long deadline;
    private int remaining;
    private int calls;
    private long t0;

    /** {@code latency} null: untimed, the clock is read only every 1,024 calls for the deadline. */
    Chain(int caller, int calls, AbstractHistogram latency, AsyncCall op, Executor pool, CountDownLatch done,
        AtomicLong failures, AtomicLong completed, long deadline) {
      this.completed = completed;
      this.caller = caller;
      this.remaining = calls;
      this.latency = latency;
      this.op = op;
      this.pool = pool;
      this.done = done;
      this.failures = failures;
      this.deadline = deadline;
    }

    @Override
    public void run() {
      if (remaining <= 0) {
        done.countDown();
        return;
      }
      if (latency != null) {
        t0 = System.nanoTime();
      }
      CompletionStage<?> stage;
      try {
        stage = op.call(caller);
      } catch (RuntimeException e) {
        failures.incrementAndGet();
        done.countDown();
        return;
      }
      stage.whenCompleteAsync(this::completed, pool);
    }

    private void completed(Object result, Throwable failure) {
      boolean inTime = true;
      if (latency != null) {
        long t1 = System.nanoTime();
        Latency.record(latency, t1 - t0);
        inTime = t1 < deadline;
      } else if ((++calls & 1023) == 0) {
        inTime = System.nanoTime() < deadline;
      }
      completed.incrementAndGet();
      if (failure != null) {
        failures.incrementAndGet();
      }
      if (--remaining > 0 && inTime) {
        run();
      } else {
        done.countDown();
      }
    }
  }
}
