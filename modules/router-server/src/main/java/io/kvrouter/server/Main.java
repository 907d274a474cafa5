package io.kvrouter.server;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.policy.Policy;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.epp.EndpointPicker;
import io.kvrouter.front.Front;
import io.kvrouter.server.grpc.ModelStates;
import io.kvrouter.server.metrics.RouterMetrics;
import io.kvrouter.server.transport.GrpcServices;
import io.kvrouter.server.transport.GrpcTransport;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.http.javadsl.model.Uri;
import org.apache.pekko.management.cluster.bootstrap.ClusterBootstrap;
import org.apache.pekko.management.javadsl.PekkoManagement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * Starts a router node: cluster membership, the admission layer, gRPC, the HTTP front, the endpoint picker and
 * management.
 */
public final class Main {
  static final String COMMON_POOL_PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism";
  private static final Logger log = LoggerFactory.getLogger(Main.class);
  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);

  private Main() {}

  public static void main(String[] args) {
    // First thing: on 2 cores the common pool has parallelism 1 and every async stage without an executor would
    // start a thread (docs/architecture.md, "Measured pitfalls"). It must be set before anything touches the pool.
    if (System.getProperty(COMMON_POOL_PARALLELISM) == null) {
      System.setProperty(COMMON_POOL_PARALLELISM, "4");
    }
    // A node the split-brain resolver downs (or that leaves) ends its JVM, so whatever supervises it restarts it
    // instead of keeping a process whose cluster is gone; Main.init in tests keeps the JVM.
    RouterNode node = init(ConfigFactory.parseString("pekko.coordinated-shutdown.exit-jvm = on"));
    System.out.println("kvrouter is up: gRPC " + node.grpcHost() + ":" + node.grpcPort()
        + ", management " + node.managementUrl() + " (try " + node.managementUrl() + "/models)"
        + (node.front() == null ? "" : ", OpenAI-compatible HTTP " + node.httpUrl())
        + (node.picker() == null ? "" : ", endpoint picker (Envoy ext_proc) " + node.picker().host() + ":"
            + node.picker().port() + " (health " + node.picker().healthPort() + ")"));
  }

  /** Starts a node from application.conf with {@code overrides} on top; tests pass ephemeral ports here. */
  public static RouterNode init(Config overrides) {
    return init(overrides, Clock.SYSTEM);
  }

  public static RouterNode init(Config overrides, Clock clock) {
    return init(overrides, clock, RouterCluster.AdmissionDecorator.NONE);
  }

  /** As {@link #init(Config, Clock)}, every admission actor wrapped by {@code admission} (tests add probes). */
  public static RouterNode init(Config overrides, Clock clock, RouterCluster.AdmissionDecorator admission) {
    bridgeJavaUtilLogging();
    warnIfCommonPoolTooSmall();
    warnIfLogFormatUnknown();
    loadPolicies();
    Config config = ClusterConfig.apply(
        ConfigFactory.load(overrides.withFallback(ConfigFactory.parseResourcesAnySyntax("application"))));
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), config.getString("kvrouter.cluster.system-name"),
        config);
    try {
      Cluster cluster = Cluster.get(system);
      // with seed nodes Pekko joins them by itself, with cluster bootstrap the bootstrap joins (below)
      if (ClusterConfig.joinsSelf(config)) {
        cluster.manager().tell(Join.create(cluster.selfMember().address()));
      }
      RouterCluster routing = RouterCluster.init(system, clock, admission);
      // before management starts: its /metrics route finds the metrics through the system
      RouterMetrics metrics = RouterMetrics.init(system, routing);
      EnginesWiring.start(system, routing, metrics);
      RequestLimits limits = new RequestLimits(config.getInt("kvrouter.max-tokens"),
          config.getInt("kvrouter.limits.max-output-tokens"), config.getInt("kvrouter.limits.max-ranks-per-worker"),
          config.getInt("kvrouter.limits.max-allowed-workers"));
      // one set of service objects, served by the configured binding (kvrouter.grpc.binding)
      GrpcServices services = GrpcServices.create(routing, limits,
          () -> cluster.selfMember().status() == MemberStatus.up(), metrics, ModelStates.Breakers.of(system));
      GrpcTransport.Bound grpc = await(GrpcTransport.start(system, GrpcTransport.Settings.fromConfig(config),
          services));
      InetSocketAddress grpcAddress = grpc.address();
      String advertised = config.getString("kvrouter.grpc.advertised-endpoint");
      routing.advertise(advertised.isEmpty() ? grpcAddress.getHostString() + ":" + grpcAddress.getPort() : advertised);
      // the OpenAI-compatible front: parses, tokenizes, books, forwards, streams and releases (router-front)
      Front front = config.getBoolean("kvrouter.front.enabled")
          ? await(Front.start(system, routing, config, limits, metrics.registry(),
              () -> cluster.selfMember().status() == MemberStatus.up()))
          : null;
      // the Gateway API Inference Extension endpoint picker: Envoy ext_proc over the same routing (router-epp)
      EndpointPicker picker = config.getBoolean("kvrouter.epp.enabled")
          ? EndpointPicker.start(system, routing, config, limits, metrics.registry(),
              () -> cluster.selfMember().status() == MemberStatus.up())
          : null;
      Uri management = await(PekkoManagement.get(system).start());
      // after management: bootstrap's peers probe each other's management routes
      if (ClusterConfig.bootstraps(config)) {
        ClusterBootstrap.get(system).start();
      }
      log.info("kvrouter gRPC ({} binding) on {}:{}, management on {}", grpc.binding().configName(),
          grpcAddress.getHostString(), grpcAddress.getPort(), management);
      return new RouterNode(system, routing, grpcAddress.getHostString(), grpcAddress.getPort(),
          management.host().address(), management.port(), front, picker);
    } catch (RuntimeException e) {
      system.terminate();
      throw e;
    }
  }

  /**
   * Reads the policy registry now, so a bad custom policy (router-core's {@code PolicyProvider}) fails the start
   * with its provider's message instead of the first call that names a policy, and the custom ones are logged.
   */
  static void loadPolicies() {
    List<Policy> policies;
    try {
      policies = Policy.values();
    } catch (ExceptionInInitializerError e) {
      throw new IllegalStateException("custom policies could not be loaded: "
          + (e.getCause() != null ? e.getCause().getMessage() : e), e.getCause());
    }
    List<String> custom = policies.stream().filter(p -> !p.isBuiltIn()).map(Policy::wireName).toList();
    if (!custom.isEmpty()) {
      log.info("custom policies: {}", String.join(", ", custom));
    }
  }

  /** grpc-java logs through java.util.logging: route it to SLF4J, so Logback's configuration governs it. */
  private static synchronized void bridgeJavaUtilLogging() {
    if (!SLF4JBridgeHandler.isInstalled()) {
      SLF4JBridgeHandler.removeHandlersForRootLogger();
      SLF4JBridgeHandler.install();
    }
  }

  /** logback.xml logs as text when KVROUTER_LOG_FORMAT names no format: say so rather than stay silent. */
  private static void warnIfLogFormatUnknown() {
    String format = System.getProperty("KVROUTER_LOG_FORMAT", System.getenv("KVROUTER_LOG_FORMAT"));
    if (format != null && !format.equals("text") && !format.equals("json")) {
      log.warn("KVROUTER_LOG_FORMAT={} names no log format (text or json): logging as text", format);
    }
  }

  static void warnIfCommonPoolTooSmall() {
    int parallelism = ForkJoinPool.getCommonPoolParallelism();
    if (parallelism < 2) {
      log.warn("ForkJoinPool.commonPool() has parallelism {}: every async stage without an executor will start a "
          + "thread. Run with -D{}=4 (the launcher and the build set it)", parallelism, COMMON_POOL_PARALLELISM);
    }
  }

  private static <T> T await(java.util.concurrent.CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(STARTUP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("router startup failed", e);
    }
  }
}
