package io.kvrouter.server.transport;

import io.kvrouter.api.health.v1.Health;
import io.kvrouter.api.health.v1.HealthPowerApiHandlerFactory;
import io.kvrouter.api.v1.Admin;
import io.kvrouter.api.v1.AdminPowerApiHandlerFactory;
import io.kvrouter.api.v1.Router;
import io.kvrouter.api.v1.RouterPowerApiHandlerFactory;
import io.kvrouter.api.v1.Workers;
import io.kvrouter.api.v1.WorkersPowerApiHandlerFactory;
import io.kvrouter.server.grpc.StatusMapping;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.grpc.javadsl.ServerReflection;
import org.apache.pekko.grpc.javadsl.ServiceHandler;
import org.apache.pekko.http.javadsl.ConnectionContext;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBuilder;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.japi.function.Function;

/**
 * The PEKKO binding: Pekko gRPC's generated handlers for Router, Workers, Admin, health and reflection on pekko-http;
 * with {@code kvrouter.grpc.tls} over HTTPS (HTTP/2 by ALPN), with {@code kvrouter.auth} behind {@link TokenAuth}.
 */
final class PekkoBinding {
  private static final Duration UNBIND_DEADLINE = Duration.ofSeconds(3);

  private PekkoBinding() {}

  /** Binds the port; it is released on the actor system's CoordinatedShutdown. */
  static CompletionStage<InetSocketAddress> start(ActorSystem<?> system, GrpcServices services,
      GrpcTransport.Settings settings) {
    ServerBuilder server = Http.get(system).newServerAt(settings.host(), settings.port());
    if (settings.tls().isPresent()) {
      server = server.enableHttps(ConnectionContext.httpsServer(settings.tls().get().pekkoEngines()));
    }
    var handler = handler(system, services, settings.maxMessageBytes());
    return server.bind(settings.auth().map(auth -> auth.around(system.classicSystem(), services.metrics(), handler)).orElse(handler))
        .thenApply(binding -> {
          binding.addToCoordinatedShutdown(UNBIND_DEADLINE, system);
          return binding.localAddress();
        });
  }

  private static Function<HttpRequest, CompletionStage<HttpResponse>> handler(ActorSystem<?> system,
      GrpcServices services, long maxMessageBytes) {
    var errors = StatusMapping.handler();
    Function<HttpRequest, CompletionStage<HttpResponse>> handlers = ServiceHandler.concatOrNotFound(
        RouterPowerApiHandlerFactory.create(services.router(), errors, system),
        WorkersPowerApiHandlerFactory.create(services.workers(), errors, system),
        AdminPowerApiHandlerFactory.create(services.admin(), errors, system),
        HealthPowerApiHandlerFactory.create(services.health(), errors, system),
        ServerReflection.create(
            List.of(Router.description, Workers.description, Admin.description, Health.description), system));
    // 5 bytes of gRPC framing per unary message
    return new BodyLimit(system, maxMessageBytes).around("/kvrouter.v1.", handlers);
  }
}
