package io.kvrouter.epp;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthCheckResponse;
import io.kvrouter.api.health.v1.HealthCheckResponse.ServingStatus;
import io.kvrouter.api.health.v1.HealthGrpc;
import io.kvrouter.core.error.RoutingError;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * grpc.health.v1.Health of the picker, as GIE's EPPs serve it: {@code liveness} is SERVING while the process runs;
 * {@code readiness}, {@code inference-extension} (the name GIE's conformance manifests probe),
 * {@code envoy.service.ext_proc.v3.ExternalProcessor} (Envoy's grpc_health_check) and {@code ""} while this node is
 * an Up member of the cluster. Watch sends the status, then every change (checked once a second).
 */
final class PickerHealth implements HealthGrpc.AsyncService {
  static final String LIVENESS = "liveness";
  static final String READINESS = "readiness";
  static final String INFERENCE_EXTENSION = "inference-extension";
  static final String EXT_PROC = "envoy.service.ext_proc.v3.ExternalProcessor";
  static final Set<String> SERVICES = Set.of("", LIVENESS, READINESS, INFERENCE_EXTENSION, EXT_PROC);

  private final BooleanSupplier ready;
  private final ScheduledExecutorService timers;

  PickerHealth(BooleanSupplier ready, ScheduledExecutorService timers) {
    this.ready = ready;
    this.timers = timers;
  }

  @Override
  public void check(HealthCheckRequest request, StreamObserver<HealthCheckResponse> response) {
    if (!SERVICES.contains(request.getService())) {
      response.onError(Status.NOT_FOUND.withDescription("unknown service '"
          + RoutingError.echo(request.getService()) + "'").asRuntimeException());
      return;
    }
    response.onNext(status(request.getService()));
    response.onCompleted();
  }

  @Override
  public void watch(HealthCheckRequest request, StreamObserver<HealthCheckResponse> response) {
    if (!SERVICES.contains(request.getService())) {
      response.onNext(HealthCheckResponse.newBuilder().setStatus(ServingStatus.SERVICE_UNKNOWN).build());
      return; // as grpc-java's health service: the call stays open, the service may appear later
    }
    ServerCallStreamObserver<HealthCheckResponse> call = (ServerCallStreamObserver<HealthCheckResponse>) response;
    HealthCheckResponse[] last = new HealthCheckResponse[1];
    Runnable push = () -> {
      synchronized (last) {
        HealthCheckResponse now = status(request.getService());
        if (!now.equals(last[0]) && !call.isCancelled()) {
          last[0] = now;
          call.onNext(now);
        }
      }
    };
    java.util.concurrent.atomic.AtomicReference<ScheduledFuture<?>> ticks =
        new java.util.concurrent.atomic.AtomicReference<>();
    call.setOnCancelHandler(() -> {
      ScheduledFuture<?> scheduled = ticks.get();
      if (scheduled != null) {
        scheduled.cancel(false);
      }
    });
    push.run();
    ticks.set(timers.scheduleWithFixedDelay(push, 1, 1, TimeUnit.SECONDS));
    if (call.isCancelled()) {
      ticks.get().cancel(false);
    }
  }

  HealthCheckResponse status(String service) {
    boolean serving = service.equals(LIVENESS) || ready.getAsBoolean();
    return HealthCheckResponse.newBuilder()
        .setStatus(serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING).build();
  }
}
