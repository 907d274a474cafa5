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
import org.apache.pekko.japi.function.Function;

/** Serves Router, Workers, Admin, health and reflection on the one gRPC port (Pekko gRPC's handlers). */
public final class GrpcServer {
  private GrpcServer() {}

  public static Function<HttpRequest, CompletionStage<HttpResponse>> handler(ActorSystem<?> system,
      RouterCluster cluster, RequestLimits limits, long maxMessageBytes, BooleanSupplier serving) {
    var errors = GrpcErrors.handler();
    Function<HttpRequest, CompletionStage<HttpResponse>> services = ServiceHandler.concatOrNotFound(
        RouterPowerApiHandlerFactory.create(new RouterService(cluster, new ProtoMapping(limits)), errors, system),
        WorkersPowerApiHandlerFactory.create(new WorkersService(cluster), errors, system),
        AdminPowerApiHandlerFactory.create(new AdminService(cluster), errors, system),
        HealthPowerApiHandlerFactory.create(
            new HealthService(Set.of(Router.name, Workers.name, Admin.name), serving), errors, system),
        ServerReflection.create(
            List.of(Router.description, Workers.description, Admin.description, Health.description), system));
    // 5 bytes of gRPC framing per unary message
    return new BodyLimit(system, maxMessageBytes + 5).around("/kvrouter.v1.", services);
  }

  public static CompletionStage<ServerBinding> bind(ActorSystem<?> system, String host, int port,
      Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    return Http.get(system).newServerAt(host, port).bind(handler);
  }
}
