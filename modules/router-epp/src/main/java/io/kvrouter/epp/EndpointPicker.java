package io.kvrouter.epp;

import com.typesafe.config.Config;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.kvrouter.api.PemTls;
import io.kvrouter.api.health.v1.HealthGrpc;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.front.NodeRouting;
import io.kvrouter.front.request.RequestParser;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import javax.net.ssl.SSLException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Gateway API Inference Extension endpoint picker of one router node: Envoy's ext_proc v3 service
 * ({@link PickerStream} per request) and grpc.health.v1 on {@code kvrouter.epp.port}, grpc.health.v1 alone on
 * {@code kvrouter.epp.health-port}, over the node's {@link NodeRouting} (the front's models file, tokenizer threads
 * and breakers). Started by {@link #start}, stopped with the actor system; {@link #get} finds it.
 */
public final class EndpointPicker {
  private static final Logger log = LoggerFactory.getLogger(EndpointPicker.class);

  private final EppSettings settings;
  private final Server server;
  private final Server health;
  private final ExecutorService executor;

  private EndpointPicker(EppSettings settings, Server server, Server health, ExecutorService executor) {
    this.settings = settings;
    this.server = server;
    this.health = health;
    this.executor = executor;
  }

  /**
   * Starts the picker of this node from {@code kvrouter.epp} in {@code config}, metering into {@code registry};
   * {@code serving} says whether the node serves (readiness). Fails with {@link IllegalArgumentException} on bad
   * settings and {@link UncheckedIOException} when a port cannot be bound.
   */
  public static EndpointPicker start(ActorSystem<?> system, RouterCluster cluster, Config config,
      RequestLimits limits, MeterRegistry registry, BooleanSupplier serving) {
    EppSettings settings = EppSettings.fromConfig(config);
    NodeRouting shared = NodeRouting.start(system, cluster, config, limits);
    EppMetrics metrics = new EppMetrics(registry, model -> {
      SelectionView view = cluster.view(model);
      return view != null && !view.isEmpty();
    });
    RequestParser parser = new RequestParser(shared.settings().maxJsonDepth(), settings.maxBodyBytes(),
        shared.settings().maxClientIdLength());
    EppContext ctx = new EppContext(settings, cluster, shared, parser, metrics, shared.settings().retryAfterSeconds());
    ExecutorService executor = Executors.newFixedThreadPool(settings.threadCount(), daemon("kvrouter-epp"));
    PickerHealth healthService = new PickerHealth(serving, shared.timers());
    // a BUFFERED body arrives in one message: room for the largest body the picker takes, and its framing
    int maxMessage = (int) Math.min(Integer.MAX_VALUE - 1, Math.max(4L << 20, settings.maxBodyBytes() + (64 << 10)));
    NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(settings.host(), settings.port()))
        .executor(executor)
        .maxInboundMessageSize(maxMessage)
        .addService(ExternalProcessorGrpc.bindService(new ExternalProcessorService(ctx)))
        .addService(HealthGrpc.bindService(healthService));
    settings.tls().ifPresent(tls -> builder.sslContext(sslContext(tls)));
    Server server;
    Server health;
    try {
      server = builder.build().start();
    } catch (IOException e) {
      executor.shutdownNow();
      throw new UncheckedIOException("cannot bind the endpoint picker to " + settings.host() + ":"
          + settings.port(), e);
    }
    try {
      health = NettyServerBuilder.forAddress(new InetSocketAddress(settings.host(), settings.healthPort()))
          .executor(executor)
          .addService(HealthGrpc.bindService(healthService))
          .build().start();
    } catch (IOException e) {
      server.shutdownNow();
      executor.shutdownNow();
      throw new UncheckedIOException("cannot bind the endpoint picker's health port to " + settings.host() + ":"
          + settings.healthPort(), e);
    }
    EndpointPicker picker = new EndpointPicker(settings, server, health, executor);
    Holder.ID.apply(system).picker = picker;
    system.getWhenTerminated().thenRun(picker::close);
    log.info("kvrouter endpoint picker (Envoy ext_proc v3{}) on {}:{}, gRPC health on {}:{}",
        settings.tls().isPresent() ? ", TLS" : "", settings.host(), picker.port(), settings.host(),
        picker.healthPort());
    return picker;
  }

  private static io.grpc.netty.shaded.io.netty.handler.ssl.SslContext sslContext(EppSettings.Tls tls) {
    SslContextBuilder builder = GrpcSslContexts.configure(SslContextBuilder.forServer(
        PemTls.keyManagers(tls.certChain(), tls.privateKey())));
    tls.clientCa().ifPresent(ca -> builder.trustManager(PemTls.trustManagers(ca)).clientAuth(ClientAuth.REQUIRE));
    try {
      return builder.build();
    } catch (SSLException e) {
      throw new IllegalArgumentException("kvrouter.epp.tls: " + e.getMessage(), e);
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, name + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    };
  }

  /** The picker started on {@code system}, or null when none runs there. */
  public static EndpointPicker get(ActorSystem<?> system) {
    return Holder.ID.apply(system).picker;
  }

  public EppSettings settings() {
    return settings;
  }

  /** The ext_proc port (bound; the configured one unless it was 0). */
  public int port() {
    return ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
  }

  public int healthPort() {
    return ((InetSocketAddress) health.getListenSockets().get(0)).getPort();
  }

  public String host() {
    return settings.host();
  }

  private void close() {
    server.shutdown();
    health.shutdown();
    try {
      if (!server.awaitTermination(2, TimeUnit.SECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      server.shutdownNow();
    }
    health.shutdownNow();
    executor.shutdownNow();
  }

  private static final class Holder implements Extension {
    static final ExtensionId<Holder> ID = new ExtensionId<>() {
      @Override
      public Holder createExtension(ActorSystem<?> system) {
        return new Holder();
      }
    };

    volatile EndpointPicker picker;
  }
}
