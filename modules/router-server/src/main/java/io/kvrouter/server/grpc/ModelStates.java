package io.kvrouter.server.grpc;

import io.kvrouter.api.Stages;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.selection.RequestLimits;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/** One model's state as Admin.GetModelState and the management routes show it: the actor's state plus the index. */
public final class ModelStates {
  private ModelStates() {}

  /** The state, or a failed stage (an empty model: INVALID_ARGUMENT EMPTY_MODEL; an unknown one: NOT_FOUND). */
  public static CompletionStage<ModelState> read(RouterCluster cluster, String model, Duration remaining) {
    return Calls.guard(() -> {
      RequestLimits.requireModel(model);
      return cluster.client(model).state(remaining);
    }).thenApplyAsync(snapshot -> {
      ModelKvIndex index = cluster.kvIndex(model);
      if (index == null) {
        return ProtoMapping.toProto(snapshot); // the actor passivated since it answered
      }
      return ProtoMapping.toProto(snapshot).toBuilder()
          .setKvEventGaps(index.gapCount())
          .setKvBlocksOverCapacity(index.overCapacityBlockCount())
          .addAllKvEventFedWorkers(index.eventFedWorkers())
          .build();
    }, Stages.SAME_THREAD);
  }
}
