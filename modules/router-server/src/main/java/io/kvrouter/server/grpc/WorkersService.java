package io.kvrouter.server.grpc;

import io.kvrouter.api.v1.Deregistered;
import io.kvrouter.api.v1.KvEventAck;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.LoadAck;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.Registered;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkersPowerApi;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.RankReport;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.RoutingError;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.grpc.javadsl.Metadata;

/** kvrouter.v1.Workers: membership and engine-reported load, all through the model's admission actor. */
public final class WorkersService implements WorkersPowerApi {
  private static final Executor SAME_THREAD = Runnable::run;

  private final RouterCluster cluster;

  public WorkersService(RouterCluster cluster) {
    this.cluster = cluster;
  }

  @Override
  public CompletionStage<Registered> register(WorkerRegistration in, Metadata metadata) {
    return Calls.guard(() -> {
      WorkerConfig config = ProtoMapping.toWorkerConfig(in);
      config.validate();
      return cluster.queue(in.getModel()).register(config, Deadlines.remaining(metadata))
          .thenApplyAsync(r -> Registered.newBuilder().setCreated(r.created()).setViewVersion(r.viewVersion())
              .build(), SAME_THREAD);
    });
  }

  @Override
  public CompletionStage<Deregistered> deregister(WorkerKey in, Metadata metadata) {
    return Calls.guard(() -> {
      ProtoMapping.requireModel(in.getModel());
      return cluster.queue(in.getModel()).deregister(in.getWorkerId(), Deadlines.remaining(metadata))
          .thenApplyAsync(dropped -> Deregistered.newBuilder().setApplied(true).setDroppedBookings(dropped)
              .build(), SAME_THREAD);
    });
  }

  @Override
  public CompletionStage<LoadAck> reportLoad(LoadReport in, Metadata metadata) {
    return Calls.guard(() -> {
      ProtoMapping.requireModel(in.getModel());
      List<RankReport> ranks = new ArrayList<>(in.getRanksCount());
      for (RankLoadReport r : in.getRanksList()) {
        ranks.add(new RankReport(r.getDpRank(), r.getActiveDecodeBlocks(), r.getActivePrefillTokens(),
            r.getWaitingRequests()));
      }
      return cluster.queue(in.getModel()).reportLoad(in.getWorkerId(), ranks, Deadlines.remaining(metadata))
          .thenApplyAsync(done -> LoadAck.newBuilder().setApplied(true).build(), SAME_THREAD);
    });
  }

  @Override
  public CompletionStage<KvEventAck> publishKvEvents(KvEventBatch in, Metadata metadata) {
    return CompletableFuture.failedFuture(new RoutingError(RoutingError.Code.FAILED_PRECONDITION,
        "KV_EVENTS_UNSUPPORTED", "this node does not index KV events yet").toException());
  }
}
