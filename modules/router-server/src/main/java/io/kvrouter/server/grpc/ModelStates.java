package io.kvrouter.server.grpc;

import io.kvrouter.api.Stages;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.api.v1.WorkerBreaker;
import io.kvrouter.front.NodeRouting;
import io.kvrouter.front.routing.CircuitBreakers;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.typed.ActorSystem;
import java.util.concurrent.CompletionStage;

/**
 * One model's state as Admin.GetModelState and the management routes show it: the actor's state, the node hosting it,
 * this node's region and staleness, plus this node's KV index and its front's circuit breakers.
 */
public final class ModelStates {
  private ModelStates() {}

  /** This node's circuit breakers of a model (the front's and the endpoint picker's; none without either). */
  public interface Breakers {
    List<CircuitBreakers.Snapshot> of(String model);

    Breakers NONE = model -> List.of();

    /** The breakers of the node's shared routing on {@code system}, looked up per read (none while none runs). */
    static Breakers of(ActorSystem<?> system) {
      return model -> {
        NodeRouting routing = NodeRouting.get(system);
        return routing == null ? List.of() : routing.breakers().snapshot(model);
      };
    }
  }

  /** The state, or a failed stage (an empty model: INVALID_ARGUMENT EMPTY_MODEL; an unknown one: NOT_FOUND). */
  public static CompletionStage<ModelState> read(RouterCluster cluster, String model, Duration remaining) {
    return read(cluster, Breakers.NONE, model, remaining);
  }

  /** As above, with this node's front's breakers of the model. */
  public static CompletionStage<ModelState> read(RouterCluster cluster, Breakers breakers, String model,
      Duration remaining) {
    return readState(cluster, model, remaining).thenApply(state -> {
      List<CircuitBreakers.Snapshot> snapshots = breakers.of(model);
      if (snapshots.isEmpty()) {
        return state;
      }
      ModelState.Builder out = state.toBuilder();
      for (CircuitBreakers.Snapshot b : snapshots) {
        out.addBreakers(WorkerBreaker.newBuilder().setWorkerId(b.workerId()).setState(b.state().name())
            .setConsecutiveFailures(b.consecutiveFailures()).setFailures(b.failures()).setTrips(b.trips())
            .setOpenUntilUnixMs(b.openUntilMillis()));
      }
      return out.build();
    });
  }

  private static CompletionStage<ModelState> readState(RouterCluster cluster, String model, Duration remaining) {
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
