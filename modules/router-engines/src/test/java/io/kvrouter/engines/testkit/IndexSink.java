package io.kvrouter.engines.testkit;

import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.indexer.KvEventSequencer;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.engines.connector.EngineSink;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * An {@link EngineSink} over one model's router-core index, as the router's fan-out feeds it (a
 * {@link KvEventSequencer} with the default reorder window in front of a {@link ModelKvIndex}, each rank bounded by
 * its registered KV blocks × 4), with the Workers calls recorded. It refuses what the router refuses: a batch over
 * the limits, an unknown worker or rank, a Register that conflicts with the registered configuration.
 */
public final class IndexSink implements EngineSink, AutoCloseable {
  public static final int BLOCKS_PER_KV_BLOCK = 4;

  public record Call(String what, String workerId, WorkerConfig config, List<RankReport> reports) {}

  private final String model;
  private volatile ModelKvIndex index = new ModelKvIndex(System::currentTimeMillis);
  private volatile KvEventSequencer sequencer = newSequencer(index);
  private final Map<String, WorkerConfig> workers = new ConcurrentHashMap<>();
  public final List<Call> calls = new CopyOnWriteArrayList<>();
  public final List<Integer> batchBlockCounts = new CopyOnWriteArrayList<>();
  public final List<Integer> batchEventCounts = new CopyOnWriteArrayList<>();

  private final java.util.concurrent.ScheduledExecutorService ticker =
      java.util.concurrent.Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "index-sink-ticker");
        thread.setDaemon(true);
        return thread;
      });

  public IndexSink(String model) {
    this.model = model;
    // a quarter of the reorder window, as the fan-out's subscriber ages held events
    ticker.scheduleWithFixedDelay(this::tick, 12, 12, java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    ticker.shutdownNow();
  }

  private static KvEventSequencer newSequencer(ModelKvIndex index) {
    return new KvEventSequencer(index, new KvEventSequencer.Settings(50, 1024), System::currentTimeMillis);
  }

  public ModelKvIndex index() {
    return index;
  }

  public KvEventSequencer sequencer() {
    return sequencer;
  }

  public WorkerConfig worker(String workerId) {
    return workers.get(workerId);
  }

  public List<Call> calls(String what) {
    List<Call> matching = new ArrayList<>();
    for (Call call : calls) {
      if (call.what().equals(what)) {
        matching.add(call);
      }
    }
    return matching;
  }

  @Override
  public CompletionStage<Boolean> register(String model, WorkerConfig worker, Duration timeout) {
    check(model);
    RequestLimits.requireWorkerShape(worker);
    calls.add(new Call("register", worker.workerId(), worker, null));
    WorkerConfig existing = workers.putIfAbsent(worker.workerId(), worker);
    if (existing != null && !existing.equals(worker)) {
      return CompletableFuture.failedFuture(new io.kvrouter.core.error.RoutingException(new RoutingError(
          RoutingError.Code.ALREADY_EXISTS, RoutingError.WORKER_CONFIG_CONFLICT, "conflicting registration")));
    }
    return CompletableFuture.completedFuture(existing == null);
  }

  @Override
  public CompletionStage<Integer> deregister(String model, String workerId, Duration timeout) {
    check(model);
    calls.add(new Call("deregister", workerId, null, null));
    if (workers.remove(workerId) == null) {
      return CompletableFuture.failedFuture(WorkerConfig.unknownWorker(model, workerId));
    }
    synchronized (index) {
      index.removeWorker(workerId);
    }
    return CompletableFuture.completedFuture(0);
  }

  @Override
  public CompletionStage<Void> reportLoad(String model, String workerId, List<RankReport> ranks, Duration timeout) {
    check(model);
    calls.add(new Call("report", workerId, null, List.copyOf(ranks)));
    if (!workers.containsKey(workerId)) {
      return CompletableFuture.failedFuture(WorkerConfig.unknownWorker(model, workerId));
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public Published publish(String model, String workerId, int dpRank, List<KvEventRecord> events) {
    check(model);
    WorkerConfig worker = workers.get(workerId);
    if (worker == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    worker.requireRank(dpRank);
    int blocks = 0;
    for (KvEventRecord event : events) {
      blocks += event.blockHashes() == null ? 0 : event.blockHashes().length;
    }
    if (events.size() > RequestLimits.MAX_KV_EVENTS_PER_BATCH || blocks > RequestLimits.MAX_KV_BLOCKS_PER_BATCH) {
      throw new IllegalStateException("batch over the router's limits: " + events.size() + " events, " + blocks
          + " blocks");
    }
    batchBlockCounts.add(blocks);
    batchEventCounts.add(events.size());
    List<KvEventSequencer.Sequenced> sequenced = new ArrayList<>(events.size());
    for (KvEventRecord event : events) {
      sequenced.add(new KvEventSequencer.Sequenced(event.eventId(), event.toEvent()));
    }
    KvEventSequencer.Outcome outcome = sequencer.offer(new Rank(workerId, dpRank),
        worker.totalKvBlocks() * BLOCKS_PER_KV_BLOCK, sequenced);
    return new Published(outcome.applied(), outcome.held(), outcome.gaps());
  }

  /** Ages held events, as the fan-out's timer does. */
  public void tick() {
    sequencer.expire();
  }

  @Override
  public int blocksPerKvBlock() {
    return BLOCKS_PER_KV_BLOCK;
  }

  private void check(String model) {
    if (!this.model.equals(model)) {
      throw RoutingError.unknownModel(model).toException();
    }
  }
}
