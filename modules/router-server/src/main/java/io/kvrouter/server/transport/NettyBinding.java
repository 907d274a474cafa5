package io.kvrouter.server.transport;

import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.shaded.io.grpc.netty.InternalProtocolNegotiators;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.ProtoReflectionService;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.kvrouter.api.health.v1.HealthGrpc;
import io.kvrouter.api.v1.AdminGrpc;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.WorkersGrpc;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;

/**
 * The NETTY binding: grpc-java's Netty server with a direct executor (no handler blocks: Select answers inline, the
 * rest complete from the admission actor's reply), serving the stubs protoc-gen-grpc-java generated into router-api
 * ({@link NettyCalls} adapts them to the one service implementation), grpc-java's server reflection (v1 and
 * v1alpha) over the generated schema descriptors, and our health service under its wire name (grpc-services' own is
 * never registered: its classes share our health.proto's file name).
 *
 * <p>Request size: grpc-java's own limit is set to a hard cap above {@code kvrouter.grpc.max-message-bytes}, and
 * {@link LimitedRequests} enforces the configured limit, so an over-limit request is answered by our code with
 * RESOURCE_EXHAUSTED and the MESSAGE_TOO_LARGE reason after the body was read whole, as on the PEKKO binding
 * (grpc-java's own rejection carries no trailers of ours).
 *
 * <p>TLS ({@code kvrouter.grpc.tls}): grpc-java's server TLS negotiator instead of the plaintext one. Auth
 * ({@code kvrouter.auth}): {@link TokenAuth}'s interceptor on each service that requires a role.
 *
 * <p>Late cancels: unless {@code kvrouter.grpc.late-cancel-window} is 0, the negotiator (plaintext or TLS) is
 * wrapped by {@link LateCancels}, so that a client's cancel arriving after a Book's answer was written, but sent before the client
 * had read past it, still frees the booking.
 */
final class NettyBinding {
  private static final Duration DRAIN = Duration.ofSeconds(3);
  /** Answered Book streams a connection remembers for late cancels, at most (each until the client's PING ack). */
  private static final int LATE_CANCEL_STREAMS = 16_384;

  private NettyBinding() {}

  /** Starts the server and stops it on the actor system's CoordinatedShutdown. */
  static InetSocketAddress start(ActorSystem<?> system, GrpcServices services, GrpcTransport.Settings settings) {
    String host = settings.host();
    int port = settings.port();
    NettyCalls calls = new NettyCalls(system, services);
    NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
        .directExecutor()
        .maxInboundMessageSize((int) settings.transportMaxMessageBytes());
    InternalProtocolNegotiator.ProtocolNegotiator negotiator = settings.tls()
        .map(tls -> InternalProtocolNegotiators.serverTls(tls.nettyContext()))
        .orElseGet(InternalProtocolNegotiators::serverPlaintext);
    if (settings.lateCancelWindow().isZero()) {
      builder.protocolNegotiator(negotiator);
    } else {
      LateCancels lateCancels = new LateCancels(settings.lateCancelWindow(), LATE_CANCEL_STREAMS);
      builder.protocolNegotiator(lateCancels.around(negotiator)).addStreamTracerFactory(lateCancels.tracers());
    }
    Optional<ServerInterceptor> auth = settings.auth().map(tokens -> tokens.interceptor(system.classicSystem(), services.metrics()));
    for (ServerServiceDefinition service : List.of(RouterGrpc.bindService(calls), WorkersGrpc.bindService(calls),
        AdminGrpc.bindService(calls), HealthGrpc.bindService(calls))) {
      ServerServiceDefinition limited = LimitedRequests.rebind(service, settings.maxMessageBytes(),
          system.classicSystem(), services.metrics());
      boolean guarded = settings.auth().map(tokens -> tokens.guards(service.getServiceDescriptor().getName()))
          .orElse(false);
      // intercepted last, so the token is checked before anything else runs
      builder.addService(guarded ? ServerInterceptors.intercept(limited, auth.get()) : limited);
    }
    builder.addService(ProtoReflectionServiceV1.newInstance());
    builder.addService(reflectionV1Alpha());
    Server server;
    try {
      server = builder.build().start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot bind gRPC (netty) to " + host + ":" + port, e);
    }
    stopOnShutdown(system, server);
    return (InetSocketAddress) server.getListenSockets().get(0);
  }

  @SuppressWarnings("deprecation")
  private static io.grpc.BindableService reflectionV1Alpha() {
    // grpcurl and older tools still ask v1alpha
    return ProtoReflectionService.newInstance();
  }

  private static void stopOnShutdown(ActorSystem<?> system, Server server) {
    CoordinatedShutdown shutdown = CoordinatedShutdown.get(system);
    shutdown.addTask(CoordinatedShutdown.PhaseServiceUnbind(), "kvrouter-grpc-netty-unbind", () -> {
      server.shutdown();
      return CompletableFuture.completedFuture(Done.getInstance());
    });
    Executor blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    shutdown.addTask(CoordinatedShutdown.PhaseServiceRequestsDone(), "kvrouter-grpc-netty-drain",
        () -> CompletableFuture.supplyAsync(() -> {
          try {
            if (!server.awaitTermination(DRAIN.toMillis(), TimeUnit.MILLISECONDS)) {
              server.shutdownNow();
              server.awaitTermination(1, TimeUnit.SECONDS);
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            server.shutdownNow();
          }
          return Done.getInstance();
        }, blocking));
  }
}
