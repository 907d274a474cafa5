package io.kvrouter.server.transport;

import com.typesafe.config.Config;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;

/** Binds the one gRPC port with the configured {@link Binding}; either binding serves the same {@link GrpcServices}. */
public final class GrpcTransport {
  private GrpcTransport() {}

  /** {@code kvrouter.grpc} and {@code kvrouter.auth}, read once (TLS files and token files too). */
  public record Settings(Binding binding, String host, int port, long maxMessageBytes,
      long transportMaxMessageBytes, Duration lateCancelWindow, Optional<GrpcTls> tls, Optional<TokenAuth> auth) {

    public Settings {
      if (transportMaxMessageBytes <= maxMessageBytes || transportMaxMessageBytes > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("kvrouter.grpc.transport-max-message-bytes (" + transportMaxMessageBytes
            + ") must be above kvrouter.grpc.max-message-bytes (" + maxMessageBytes + ") and below 2 GiB");
      }
      if (lateCancelWindow.isNegative()) {
        throw new IllegalArgumentException("kvrouter.grpc.late-cancel-window must not be negative");
      }
    }

    public static Settings fromConfig(Config root) {
      Config grpc = root.getConfig("kvrouter.grpc");
      return new Settings(Binding.fromConfig(grpc.getString("binding")), grpc.getString("host"), grpc.getInt("port"),
          grpc.getBytes("max-message-bytes"), grpc.getBytes("transport-max-message-bytes"),
          grpc.getDuration("late-cancel-window"), GrpcTls.fromConfig(grpc),
          Optional.ofNullable(TokenAuth.fromConfig(root)));
    }
  }

  /** The bound port; it is released on the actor system's CoordinatedShutdown. */
  public record Bound(Binding binding, InetSocketAddress address) {}

  public static CompletionStage<Bound> start(ActorSystem<?> system, Settings settings, GrpcServices services) {
    return switch (settings.binding()) {
      case PEKKO -> PekkoBinding.start(system, services, settings)
          .thenApply(address -> new Bound(Binding.PEKKO, address));
      case NETTY -> {
        try {
          yield CompletableFuture.completedFuture(new Bound(Binding.NETTY, NettyBinding.start(system, services,
              settings)));
        } catch (RuntimeException e) {
          yield CompletableFuture.failedFuture(e);
        }
      }
    };
  }
}
