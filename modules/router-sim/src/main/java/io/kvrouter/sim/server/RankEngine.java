package io.kvrouter.sim.server;

import io.kvrouter.sim.engine.EngineRank;
import io.kvrouter.sim.engine.KvBlockCache;
import io.kvrouter.sim.engine.KvCacheEvent;
import io.kvrouter.sim.engine.SimRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One data-parallel rank on the wall clock (vLLM's engine core): router-sim's {@link EngineRank} stepping on a thread
 * of its own, each step lasting its {@link io.kvrouter.sim.engine.TimingModel} duration divided by the time scale.
 * Between steps it takes new requests and aborts (as vLLM's core does between steps); after each step it hands the
 * produced tokens to the requests' {@link ResponseCollector}s, publishes the step's KV events as one batch and updates
 * the metrics. Only this thread touches the rank; others talk to it through its command queue.
 */
final class RankEngine implements AutoCloseable {
  /** One sequence to generate: its whole token sequence (prompt, then the output it will produce). */
  record Job(SimRequest request, ResponseCollector collector, int choice, long arrivalNanos, String finishReason,
      int transferredTokens) {}

  private static final Logger log = LoggerFactory.getLogger(RankEngine.class);

  private final int rank;
  private final EngineRank engine;
  private final KvBlockCache cache;
  private final double timeScale;
  private final EngineMetrics metrics;
  private final ZmqKvEventPublisher publisher;
  private final LinkedBlockingQueue<Runnable> commands = new LinkedBlockingQueue<>();
  private final Map<String, Job> jobs = new HashMap<>();
  private final Map<String, Integer> delivered = new HashMap<>();
  private final AtomicInteger load = new AtomicInteger();
  private final Thread thread;
  private volatile boolean running = true;

  RankEngine(int rank, EngineConfig config, EngineMetrics metrics, ZmqKvEventPublisher publisher) {
    this.rank = rank;
    this.cache = new KvBlockCache(config.kvBlocks(), 0x5E12L * (rank + 1) ^ config.seed());
    this.engine = new EngineRank(cache, config.timing(), config.limits());
    this.timeScale = config.timeScale();
    this.metrics = metrics;
    this.publisher = publisher;
    if (publisher != null) {
      // a new engine starts from an empty cache: say so first (seq 0), so a subscriber that attaches late and replays
      // from the oldest batch clears what it held of an earlier process (vLLM publishes it on a prefix-cache reset)
      publisher.publish(nowSeconds(), List.of(new KvCacheEvent.Cleared(0)));
    }
    this.thread = new Thread(this::run, "sim-engine-rank-" + rank);
    this.thread.setDaemon(true);
    this.thread.start();
  }

  int rank() {
    return rank;
  }

  /** Requests submitted and not yet finished or aborted (for choosing a rank). */
  int load() {
    return load.get();
  }

  void submit(Job job) {
    load.incrementAndGet();
    commands.add(() -> {
      jobs.put(job.request().id(), job);
      delivered.put(job.request().id(), 0);
      engine.enqueue(job.request(), job.transferredTokens());
    });
  }

  /** Aborts a request (its client went away): done between steps, its computed blocks stay cached. */
  void abort(String requestId) {
    commands.add(() -> {
      Job job = jobs.remove(requestId);
      if (job != null && engine.abort(requestId)) {
        delivered.remove(requestId);
        load.decrementAndGet();
        metrics.finished(rank, "abort", secondsSince(job.arrivalNanos()));
        job.collector().append(job.choice(), new int[0], "abort");
      }
    });
  }

  /** vLLM's reset_prefix_cache: refused (false) while requests hold blocks. */
  CompletableFuture<Boolean> resetPrefixCache() {
    CompletableFuture<Boolean> result = new CompletableFuture<>();
    commands.add(() -> result.complete(engine.inFlight() == 0 && cache.resetPrefixCache()));
    return result;
  }

  private void run() {
    long due = System.nanoTime();
    try {
      while (running) {
        Runnable command;
        while ((command = commands.poll()) != null) {
          command.run();
        }
        long micros = engine.beginStep();
        List<KvCacheEvent> events = new ArrayList<>(cache.drainEvents());
        if (micros < 0) {
          publish(events);
          gauges();
          command = commands.poll(100, TimeUnit.MILLISECONDS);
          if (command != null) {
            command.run();
          }
          due = System.nanoTime();
          continue;
        }
        // never catch up by bursting: when the host falls behind, simulated time runs slower instead
        due = Math.max(due, System.nanoTime()) + Math.round(micros * 1000 / timeScale);
        long wait;
        while ((wait = due - System.nanoTime()) > 0) {
          LockSupport.parkNanos(wait);
        }
        EngineRank.StepOutcome outcome = engine.endStep();
        events.addAll(cache.drainEvents());
        publish(events);
        deliver(outcome);
        gauges();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      log.error("rank {}: engine loop failed", rank, e);
    }
  }

  private void deliver(EngineRank.StepOutcome outcome) {
    for (EngineRank.Active admitted : outcome.admitted()) {
      metrics.prefixCacheLookup(rank, admitted.request().promptTokens(), admitted.cachedTokens());
    }
    for (EngineRank.Active first : outcome.firstTokens()) {
      Job job = jobs.get(first.request().id());
      if (job != null) {
        metrics.firstToken(rank, first.request().promptTokens(), secondsSince(job.arrivalNanos()));
        job.collector().prefilled(job.choice(), first.cachedTokens());
      }
    }
    long generated = 0;
    for (EngineRank.Active active : outcome.produced()) {
      SimRequest request = active.request();
      Job job = jobs.get(request.id());
      if (job == null) {
        continue;
      }
      int from = delivered.get(request.id());
      int to = active.generated();
      generated += to - from;
      delivered.put(request.id(), to);
      boolean last = to >= request.outputTokens();
      int[] tokens = Arrays.copyOfRange(request.tokens(), request.promptTokens() + from, request.promptTokens() + to);
      job.collector().append(job.choice(), tokens, last ? job.finishReason() : null);
    }
    if (generated > 0) {
      metrics.generated(rank, generated);
    }
    for (EngineRank.Active done : outcome.finished()) {
      Job job = jobs.remove(done.request().id());
      delivered.remove(done.request().id());
      if (job != null) {
        load.decrementAndGet();
        metrics.finished(rank, job.finishReason(), secondsSince(job.arrivalNanos()));
      }
    }
  }

  private void publish(List<KvCacheEvent> events) {
    if (publisher != null && !events.isEmpty()) {
      publisher.publish(nowSeconds(), events);
    }
  }

  private void gauges() {
    metrics.scheduler(rank, engine.runningCount(), engine.waitingCount(),
        (double) cache.activeBlocks() / cache.capacity());
  }

  private static double nowSeconds() {
    return System.currentTimeMillis() / 1000.0;
  }

  private static double secondsSince(long nanos) {
    return (System.nanoTime() - nanos) / 1e9;
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
    try {
      thread.join(2_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
