package io.kvrouter.server.grpc;

import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthCheckResponse;
import io.kvrouter.api.health.v1.HealthCheckResponse.ServingStatus;
import io.kvrouter.api.health.v1.HealthPowerApi;
import io.grpc.Status;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;
import org.apache.pekko.NotUsed;
import org.apache.pekko.grpc.GrpcServiceException;
import org.apache.pekko.grpc.javadsl.Metadata;
import org.apache.pekko.stream.javadsl.Source;

/**
 * grpc.health.v1.Health: SERVING while this node is an Up member of the cluster (the same condition as the
 * management readiness check), for the whole server ("") and for each kvrouter service.
 */
public final class HealthService implements HealthPowerApi {
  private final Set<String> services;
  private final BooleanSupplier serving;

  public HealthService(Set<String> services, BooleanSupplier serving) {
    this.services = services;
    this.serving = serving;
  }

  @Override
  public CompletionStage<HealthCheckResponse> check(HealthCheckRequest in, Metadata metadata) {
    if (!in.getService().isEmpty() && !services.contains(in.getService())) {
      return CompletableFuture.failedFuture(new GrpcServiceException(
          Status.NOT_FOUND.withDescription(
              "unknown service '" + io.kvrouter.core.error.RoutingError.echo(in.getService()) + "'")));
    }
    return CompletableFuture.completedFuture(current());
  }

  /** Sends the status now and again whenever it changes (polled once a second). */
  @Override
  public Source<HealthCheckResponse, NotUsed> watch(HealthCheckRequest in, Metadata metadata) {
    if (!in.getService().isEmpty() && !services.contains(in.getService())) {
      return Source.single(response(ServingStatus.SERVICE_UNKNOWN));
    }
    return Source.tick(Duration.ZERO, Duration.ofSeconds(1), NotUsed.getInstance())
        .map(tick -> current())
        .via(org.apache.pekko.stream.javadsl.Flow.<HealthCheckResponse>create().statefulMapConcat(() -> {
          HealthCheckResponse[] last = new HealthCheckResponse[1];
          return status -> {
            if (status.equals(last[0])) {
              return java.util.List.of();
            }
            last[0] = status;
            return java.util.List.of(status);
          };
        }))
        .mapMaterializedValue(cancellable -> NotUsed.getInstance());
  }

  private HealthCheckResponse current() {
    return response(serving.getAsBoolean() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
  }

  private static HealthCheckResponse response(ServingStatus status) {
    return HealthCheckResponse.newBuilder().setStatus(status).build();
  }
}
