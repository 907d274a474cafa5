package io.kvrouter.server.grpc;

import io.kvrouter.api.health.v1.Health;
import io.kvrouter.api.health.v1.HealthPowerApiHandlerFactory;
import io.kvrouter.api.v1.Admin;
import io.kvrouter.api.v1.AdminPowerApiHandlerFactory;
import io.kvrouter.api.v1.Router;
import io.kvrouter.api.v1.RouterPowerApiHandlerFactory;
import io.kvrouter.api.v1.Workers;
import io.kvrouter.api.v1.WorkersPowerApiHandlerFactory;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.selection.RequestLimits;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.grpc.javadsl.ServerReflection;
import org.apache.pekko.grpc.javadsl.ServiceHandler;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.apache.pekko.japi.function.Function;

/**
 * Pekko gRPC's stock handlers for Router, Workers, Admin, health and reflection on the one gRPC port: the whole of
 * the PEKKO binding, and what the PEKKO_FAST binding falls back to ({@code io.kvrouter.server.transport} picks the
 * binding).
 */
public final class GrpcServer {
  private GrpcServer() {}

  public static Function<HttpRequest, CompletionStage<HttpResponse>> handler(ActorSystem<?> system,
      RouterCluster cluster, RequestLimits limits, long maxMessageBytes, BooleanSupplier serving) {
    return handler(system, new RouterService(cluster, new ProtoMapping(limits)), new WorkersService(cluster),
        new AdminService(cluster), new HealthService(Set.of(Router.name, Workers.name, Admin.name), serving),
        maxMessageBytes);
  }

  /** The stock handler over the given service objects (the same ones the other bindings call). */
  public static Function<HttpRequest, CompletionStage<HttpResponse>> handler(ActorSystem<?> system,
      RouterService router, WorkersService workers, AdminService admin, HealthService health, long maxMessageBytes) {
    var errors = GrpcErrors.handler();
    Function<HttpRequest, CompletionStage<HttpResponse>> services = ServiceHandler.concatOrNotFound(
        RouterPowerApiHandlerFactory.create(router, errors, system),
        WorkersPowerApiHandlerFactory.create(workers, errors, system),
        AdminPowerApiHandlerFactory.create(admin, errors, system),
        HealthPowerApiHandlerFactory.create(health, errors, system),
        ServerReflection.create(
            List.of(Router.description, Workers.description, Admin.description, Health.description), system));
    // 5 bytes of gRPC framing per unary message
    return new BodyLimit(system, maxMessageBytes + 5).around("/kvrouter.v1.", services);
  }

  public static CompletionStage<ServerBinding> bind(ActorSystem<?> system, String host, int port,
      Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    return Http.get(system).newServerAt(host, port).bind(handler);
  }

  public static CompletionStage<ServerBinding> bind(ActorSystem<?> system, String host, int port,
      ServerSettings settings, Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    return Http.get(system).newServerAt(host, port).withSettings(settings).bind(handler);
  }
}
