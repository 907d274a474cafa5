package io.kvrouter.server.metrics;

import io.grpc.StatusRuntimeException;
import io.kvrouter.api.Stages;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.server.grpc.StatusMapping;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.regex.Pattern;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * A node's metrics: one Micrometer Prometheus registry with the JVM's binders, the gRPC services' per-call figures,
 * and what a scrape reads from the routing layer (per registered model: {@link ModelMeters}; per region: cluster
 * membership). The management server serves {@link #scrape} at {@code /metrics}.
 *
 * <p>Label sets are bounded: {@code model} only for models with registered workers on this node (their series go
 * once the node no longer lists the model), {@code policy} the five policies, {@code method} the Router calls,
 * {@code status} gRPC codes, {@code reason} the rejection reasons (constants), {@code region} the cluster's data
 * centers. Never a request id.
 */
public final class RouterMetrics {
  /** The Router calls as {@code method} labels. */
  public static final String SELECT = "Select";
  public static final String BOOK = "Book";
  public static final String RELEASE = "Release";
  public static final String MARK_PREFILL_DONE = "MarkPrefillDone";
  public static final String RENEW = "Renew";

  /** How long a scrape waits for a model's admission snapshot or replica staleness before using the last figures. */
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(2);
  /** Rejection reasons are constants of this shape; anything else is counted as OTHER. */
  private static final Pattern REASON = Pattern.compile("[A-Z][A-Z_]{0,63}");

  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final RouterCluster cluster;
  private final Cluster membership;
  private final Executor executor;
  private final Map<String, ModelMeters> models = new ConcurrentHashMap<>();
  private final MultiGauge members;
  private final MultiGauge unreachable;
  private final JvmGcMetrics gc = new JvmGcMetrics();

  private RouterMetrics(ActorSystem<?> system, RouterCluster cluster) {
    this.cluster = cluster;
    this.membership = Cluster.get(system);
    this.executor = system.executionContext();
    new JvmMemoryMetrics().bindTo(registry);
    gc.bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ClassLoaderMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    members = MultiGauge.builder("kvrouter.cluster.members")
        .description("Cluster members this node sees, by region and status").register(registry);
    unreachable = MultiGauge.builder("kvrouter.cluster.unreachable.members")
        .description("Members this node's failure detector marks unreachable, by region").register(registry);
  }

  /** Starts the node's metrics; {@link #get} finds them afterwards (the management route does). */
  public static RouterMetrics init(ActorSystem<?> system, RouterCluster cluster) {
    RouterMetrics metrics = new RouterMetrics(system, cluster);
    Holder.ID.apply(system).metrics = metrics;
    system.getWhenTerminated().thenRun(metrics::close);
    return metrics;
  }

  public static RouterMetrics get(ActorSystem<?> system) {
    RouterMetrics metrics = Holder.ID.apply(system).metrics;
    if (metrics == null) {
      throw new IllegalStateException("RouterMetrics.init has not run on " + system.name());
    }
    return metrics;
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  // ---------------------------------------------------------------- per call (gRPC service layer)

  /**
   * An answered Select that started at {@code startNanos} ({@link System#nanoTime}), answered from {@code view}
   * (its policy labels the series). A model without registered workers has no series: nothing is recorded.
   */
  public void selected(String model, SelectionView view, long startNanos) {
    long nanos = System.nanoTime() - startNanos;
    ModelMeters meters = meters(model, view);
    if (meters != null) {
      meters.selected(view.policy().policy(), nanos);
    }
  }

  /**
   * An answered Book; {@code view} is the one the call started from, {@code policyClass} the admission queue class
   * it was booked in (labels its queue wait).
   */
  public void booked(String model, SelectionView view, long startNanos, long queuedMicros, boolean replay,
      String policyClass) {
    long nanos = System.nanoTime() - startNanos;
    ModelMeters meters = meters(model, view);
    if (meters != null) {
      meters.booked(view.policy().policy(), nanos, queuedMicros, replay, policyClass);
    }
  }

  /** An answered Release of a model known here (an unknown model's Releases add no series). */
  public void released(String model, boolean applied) {
    ModelMeters meters = meters(model, cluster.client(model).view());
    if (meters != null) {
      meters.released(applied);
    }
  }

  /** A call of {@code method} that failed: counted by gRPC status and reason. */
  public void rejected(String method, Throwable failure) {
    Rejection rejection = Rejection.of(failure);
    Counter.builder("kvrouter.rejections")
        .description("gRPC calls (Router, Workers, Admin) answered with an error, by method, gRPC status and kvrouter-reason")
        .tags(Tags.of("method", method, "status", rejection.status(), "reason", rejection.reason()))
        .register(registry).increment();
  }

  /** A failure's gRPC status and reason, as labels. */
  public record Rejection(String status, String reason) {
    public static Rejection of(Throwable failure) {
      Throwable cause = Stages.unwrap(failure);
      if (cause instanceof RoutingException routing) {
        String reason = routing.error().reason();
        return new Rejection(StatusMapping.toStatus(routing.error().code()).name(),
            reason != null && REASON.matcher(reason).matches() ? reason : "OTHER");
      }
      if (cause instanceof CancellationException) {
        return new Rejection("CANCELLED", "NONE");
      }
      if (cause instanceof StatusRuntimeException status) {
        return new Rejection(status.getStatus().getCode().name(), "NONE");
      }
      return new Rejection("UNKNOWN", "NONE");
    }
  }

  private ModelMeters meters(String model, SelectionView view) {
    if (view == null || view.isEmpty()) {
      return null;
    }
    ModelMeters meters = models.get(model);
    return meters != null ? meters : models.computeIfAbsent(model, m -> new ModelMeters(m, registry, cluster));
  }

  // ---------------------------------------------------------------- scrape

  /**
   * The Prometheus text exposition, after refreshing what gauges cannot read synchronously: drops the series of
   * models this node no longer lists, reads each listed model's admission snapshot (where its actor runs here) or
   * replica staleness, and counts members per region.
   */
  public CompletionStage<String> scrape() {
    List<String> listed = cluster.models();
    Set<String> current = new HashSet<>(listed);
    models.forEach((model, meters) -> {
      if (!current.contains(model) && models.remove(model, meters)) {
        meters.remove();
      }
    });
    countMembers();
    CompletableFuture<?>[] reads = new CompletableFuture<?>[listed.size()];
    for (int i = 0; i < reads.length; i++) {
      String model = listed.get(i);
      var client = cluster.client(model);
      ModelMeters meters = meters(model, client.view());
      reads[i] = meters == null ? CompletableFuture.completedFuture(null)
          : meters.refresh(client, READ_TIMEOUT).toCompletableFuture();
    }
    return CompletableFuture.allOf(reads).handleAsync((done, failure) -> registry.scrape(), executor);
  }

  private void countMembers() {
    var state = membership.state();
    Map<List<String>, Integer> byRegionAndStatus = new HashMap<>();
    Map<String, Integer> unreachableByRegion = new HashMap<>();
    for (Member member : state.getMembers()) {
      byRegionAndStatus.merge(List.of(member.dataCenter(), member.status().toString().toLowerCase(Locale.ROOT)), 1,
          Integer::sum);
      unreachableByRegion.putIfAbsent(member.dataCenter(), 0);
    }
    for (Member member : state.getUnreachable()) {
      unreachableByRegion.merge(member.dataCenter(), 1, Integer::sum);
    }
    members.register(byRegionAndStatus.entrySet().stream()
        .map(e -> MultiGauge.Row.of(Tags.of("region", e.getKey().get(0), "status", e.getKey().get(1)), e.getValue()))
        .toList(), true);
    unreachable.register(unreachableByRegion.entrySet().stream()
        .map(e -> MultiGauge.Row.of(Tags.of("region", e.getKey()), e.getValue())).toList(), true);
  }

  private void close() {
    gc.close();
    registry.close();
  }

  private static final class Holder implements Extension {
    static final ExtensionId<Holder> ID = new ExtensionId<>() {
      @Override
      public Holder createExtension(ActorSystem<?> system) {
        return new Holder();
      }
    };

    volatile RouterMetrics metrics;
  }
}
