package io.kvrouter.server.grpc;

import io.kvrouter.api.Stages;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.selection.RequestLimits;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * One model's state as Admin.GetModelState and the management routes show it: the actor's state, the node hosting it,
 * this node's region and staleness, plus this node's KV index.
 */
public final class ModelStates {
  private ModelStates() {}

  /** The state, or a failed stage (an empty model: INVALID_ARGUMENT EMPTY_MODEL; an unknown one: NOT_FOUND). */
  public static CompletionStage<ModelState> read(RouterCluster cluster, String model, Duration remaining) {
    return Calls.guard(() -> {
      RequestLimits.requireModel(model);
      return cluster.client(model).state(remaining);
    }).thenApplyAsync(report -> {
      ModelKvIndex index = cluster.kvIndex(model);
      if (index == null) {
        // the model was forgotten here since the actor answered
        return ProtoMapping.toProto(report).toBuilder()
            .addAllPools(ProtoMapping.pools(cluster.regions(), model)).build();
      }
      return ProtoMapping.toProto(report).toBuilder()
          .addAllPools(ProtoMapping.pools(cluster.regions(), model))
          .setKvEventGaps(index.gapCount())
          .setKvBlocksOverCapacity(index.overCapacityBlockCount())
          .addAllKvEventFedWorkers(index.eventFedWorkers())
          .build();
    }, Stages.SAME_THREAD);
  }
}
