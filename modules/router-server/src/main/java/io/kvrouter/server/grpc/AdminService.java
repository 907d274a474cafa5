package io.kvrouter.server.grpc;

import io.kvrouter.api.v1.AdminPowerApi;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.ModelList;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.PolicySet;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.selection.RequestLimits;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.grpc.javadsl.Metadata;

/**
 * kvrouter.v1.Admin: policy changes and each model's admission state, read through its actor. The power-API methods
 * read the deadline from the metadata and delegate to the overloads every other binding calls.
 */
public final class AdminService implements AdminPowerApi {
  private static final Executor SAME_THREAD = Runnable::run;

  private final RouterCluster cluster;

  public AdminService(RouterCluster cluster) {
    this.cluster = cluster;
  }

  @Override
  public CompletionStage<PolicySet> setPolicy(SetPolicyRequest in, Metadata metadata) {
    return Calls.guard(() -> setPolicy(in, Deadlines.remaining(metadata)));
  }

  public CompletionStage<PolicySet> setPolicy(SetPolicyRequest in, Duration remaining) {
    return Calls.guard(() -> {
      RequestLimits.requireModel(in.getModel());
      return cluster.client(in.getModel()).setPolicy(in.getPolicy(), in.getParametersMap(), remaining)
          .thenApplyAsync(r -> PolicySet.newBuilder().setPolicy(r.policy()).setViewVersion(r.viewVersion()).build(),
              SAME_THREAD);
    });
  }

  @Override
  public CompletionStage<ModelState> getModelState(ModelStateRequest in, Metadata metadata) {
    return Calls.guard(() -> getModelState(in, Deadlines.remaining(metadata)));
  }

  public CompletionStage<ModelState> getModelState(ModelStateRequest in, Duration remaining) {
    return Calls.guard(() -> ModelStates.read(cluster, in.getModel(), remaining));
  }

  @Override
  public CompletionStage<ModelList> listModels(ListModelsRequest in, Metadata metadata) {
    return listModels(in);
  }

  public CompletionStage<ModelList> listModels(ListModelsRequest in) {
    return CompletableFuture.completedFuture(ModelList.newBuilder().addAllModels(cluster.models()).build());
  }
}
