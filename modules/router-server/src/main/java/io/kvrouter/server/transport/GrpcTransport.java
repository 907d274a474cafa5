package io.kvrouter.server.transport;

import com.typesafe.config.Config;
import io.kvrouter.server.grpc.GrpcServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.apache.pekko.japi.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Binds the one gRPC port with the configured {@link Binding}; each binding serves the same {@link GrpcServices}. */
public final class GrpcTransport {
  private static final Logger log = LoggerFactory.getLogger(GrpcTransport.class);
  private static final Duration UNBIND_DEADLINE = Duration.ofSeconds(3);

  private GrpcTransport() {}

  /** {@code kvrouter.grpc}, read once. */
  public record Settings(Binding binding, String host, int port, long maxMessageBytes,
      int fastPathMinCollectStrictEntitySize, long nettyMaxInboundMessageBytes) {

    public static Settings fromConfig(Config root) {
      Config grpc = root.getConfig("kvrouter.grpc");
      return new Settings(Binding.fromConfig(grpc.getString("binding")), grpc.getString("host"), grpc.getInt("port"),
          grpc.getBytes("max-message-bytes"), grpc.getInt("pekko-fast.min-collect-strict-entity-size"),
          grpc.getBytes("netty.max-inbound-message-bytes"));
    }
  }

  /** The bound port; it is released on the actor system's CoordinatedShutdown. */
  public record Bound(Binding binding, InetSocketAddress address) {}

  public static CompletionStage<Bound> start(ActorSystem<?> system, Settings settings, GrpcServices services) {
    return switch (settings.binding()) {
      case PEKKO -> GrpcServer.bind(system, settings.host(), settings.port(), stock(system, settings, services))
          .thenApply(binding -> {
            binding.addToCoordinatedShutdown(UNBIND_DEADLINE, system);
            return new Bound(Binding.PEKKO, binding.localAddress());
          });
      case PEKKO_FAST -> {
        TransportStats stats = TransportStats.get(system);
        var handler = new FastPathHandler(services.unaryMethods(), settings.maxMessageBytes(),
            stock(system, settings, services), stats, system.classicSystem());
        ServerSettings server = ServerSettings.create(system.classicSystem());
        // only on the gRPC port: bodies that arrive in one DATA frame reach the handler strict
        server = server.withHttp2Settings(server.getHttp2Settings()
            .withMinCollectStrictEntitySize(settings.fastPathMinCollectStrictEntitySize()));
        yield GrpcServer.bind(system, settings.host(), settings.port(), server, handler).thenApply(binding -> {
          binding.addToCoordinatedShutdown(UNBIND_DEADLINE, system);
          CoordinatedShutdown.get(system).addTask(CoordinatedShutdown.PhaseServiceUnbind(),
              "kvrouter-grpc-fast-path-stats", () -> {
                log.info("gRPC pekko-fast binding served: {}", stats);
                return CompletableFuture.completedFuture(Done.getInstance());
              });
          return new Bound(Binding.PEKKO_FAST, binding.localAddress());
        });
      }
      case NETTY -> {
        try {
          yield CompletableFuture.completedFuture(new Bound(Binding.NETTY, NettyBinding.start(system, services,
              settings.host(), settings.port(), settings.maxMessageBytes(), settings.nettyMaxInboundMessageBytes())));
        } catch (RuntimeException e) {
          yield CompletableFuture.failedFuture(e);
        }
      }
    };
  }

  private static Function<HttpRequest, CompletionStage<HttpResponse>> stock(ActorSystem<?> system, Settings settings,
      GrpcServices services) {
    return GrpcServer.handler(system, services.router(), services.workers(), services.admin(), services.health(),
        settings.maxMessageBytes());
  }
}
