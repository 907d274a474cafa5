package io.kvrouter.engines.cluster;

import io.kvrouter.cluster.kvevents.KvEventFanout;
import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.engines.connector.EngineSink;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * The connectors' {@link EngineSink} over this node's routing layer: the same calls router-server's
 * {@code WorkersService} makes for the gRPC {@code Workers} service (Register and Deregister through the model's
 * admission actor via {@code RouterCluster.client(model)}, ReportLoad likewise, PublishKvEvents into this node's index
 * and the region's fan-out through {@code RouterCluster.kvEvents()}). The one class of the module that uses
 * router-cluster's API.
 */
public final class ClusterEngineSink implements EngineSink {
  private final RouterCluster cluster;
  private final int blocksPerKvBlock;

  /**
   * @param blocksPerKvBlock {@code kvrouter.kv-index.blocks-per-kv-block}, the bound the fan-out applies per rank
   */
  public ClusterEngineSink(RouterCluster cluster, int blocksPerKvBlock) {
    this.cluster = cluster;
    this.blocksPerKvBlock = blocksPerKvBlock;
  }

  @Override
  public CompletionStage<Boolean> register(String model, WorkerConfig worker, Duration timeout) {
    return cluster.client(model).register(worker, timeout).thenApply(registered -> registered.created());
  }

  @Override
  public CompletionStage<Integer> deregister(String model, String workerId, Duration timeout) {
    return cluster.client(model).deregister(workerId, timeout);
  }

  @Override
  public CompletionStage<Void> reportLoad(String model, String workerId, List<RankReport> ranks, Duration timeout) {
    return cluster.client(model).reportLoad(workerId, ranks, timeout);
  }

  @Override
  public Published publish(String model, String workerId, int dpRank, List<KvEventRecord> events) {
    KvEventFanout.Applied applied = cluster.kvEvents().publish(model, workerId, dpRank, events);
    return new Published(applied.applied(), applied.held(), applied.gaps());
  }

  @Override
  public int blocksPerKvBlock() {
    return blocksPerKvBlock;
  }
}
