package io.kvrouter.server.grpc;

import static io.kvrouter.api.Stages.SAME_THREAD;

import io.kvrouter.api.v1.AdminPowerApi;
import io.kvrouter.api.v1.ExplainReply;
import io.kvrouter.api.v1.ExplainRequest;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.ModelList;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.PolicySet;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.cluster.RouterCluster;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import io.kvrouter.server.metrics.RouterMetrics;
import org.apache.pekko.grpc.javadsl.Metadata;

/**
 * kvrouter.v1.Admin: policy changes, each model's admission state (read through its actor with the caller's
 * deadline from the metadata) and its last decisions.
 */
public final class AdminService implements AdminPowerApi {
  private final RouterCluster cluster;
  private final ProtoMapping mapping;
  private final RouterMetrics metrics;
  private final ModelStates.Breakers breakers;

  public AdminService(RouterCluster cluster, ProtoMapping mapping, RouterMetrics metrics) {
    this(cluster, mapping, metrics, ModelStates.Breakers.NONE);
  }

  public AdminService(RouterCluster cluster, ProtoMapping mapping, RouterMetrics metrics,
      ModelStates.Breakers breakers) {
    this.cluster = cluster;
    this.mapping = mapping;
    this.metrics = metrics;
    this.breakers = breakers;
  }

  @Override
  public CompletionStage<PolicySet> setPolicy(SetPolicyRequest in, Metadata metadata) {
    return Calls.counted(metrics, "SetPolicy", () -> {
      mapping.validate(in);
      return cluster.client(in.getModel())
          .setPolicy(in.getPolicy(), in.getParametersMap(), Deadlines.remaining(metadata))
          .thenApplyAsync(r -> PolicySet.newBuilder().setPolicy(r.policy()).setViewVersion(r.viewVersion()).build(),
              SAME_THREAD);
    });
  }

  @Override
  public CompletionStage<ModelState> getModelState(ModelStateRequest in, Metadata metadata) {
    return Calls.counted(metrics, "GetModelState",
        () -> ModelStates.read(cluster, breakers, in.getModel(), Deadlines.remaining(metadata)));
  }

  @Override
  public CompletionStage<ExplainReply> explainRecent(ExplainRequest in, Metadata metadata) {
    return Calls.counted(metrics, "ExplainRecent", () -> Explanations.read(cluster, in.getModel(),
        Explanations.limit(in.getLimit()), Deadlines.remaining(metadata)));
  }

  @Override
  public CompletionStage<ModelList> listModels(ListModelsRequest in, Metadata metadata) {
    return CompletableFuture.completedFuture(ModelList.newBuilder().addAllModels(cluster.models()).build());
  }
}
