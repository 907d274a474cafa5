package io.kvrouter.cluster.regions;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.regions.PoolChooser;
import io.kvrouter.core.regions.PoolSummary;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * A node's knowledge of the regions: the pools it heard of ({@link PoolSummaries}), which pool a global call goes to,
 * where callers reach each region's routers, and why a regional call finds no worker here. It makes no call to any
 * actor: calls to another region's admission actor go through that region's {@code ModelClient}.
 */
public final class Regions {
  private final String self;
  private final PoolSummaries pools;
  private final RegionsConfig config;
  private final PoolPublisher publisher;
  /** This node's router endpoint(s) as its summaries carry them. */
  private final AtomicReference<List<String>> ownEndpoints;
  /** This node's advertised gRPC endpoint (empty until the server has bound): its summaries' owner endpoint. */
  private final AtomicReference<String> advertised;

  private Regions(String self, PoolSummaries pools, RegionsConfig config, PoolPublisher publisher,
      AtomicReference<List<String>> ownEndpoints, AtomicReference<String> advertised) {
    this.self = self;
    this.pools = pools;
    this.config = config;
    this.publisher = publisher;
    this.ownEndpoints = ownEndpoints;
    this.advertised = advertised;
  }

  /**
   * Starts this node's part: the cluster-wide summaries topic, the listener that keeps what it hears (sweeping every
   * quarter of {@code stale-after}), and the publisher this node's admission actors use.
   *
   * @param self this node's region (its data center)
   */
  public static Regions start(ActorSystem<?> system, LongSupplier clock, RegionsConfig config, String self) {
    String configured = config.endpoints().get(self);
    AtomicReference<List<String>> ownEndpoints = new AtomicReference<>(
        configured == null ? List.of() : List.of(configured));
    AtomicReference<String> advertised = new AtomicReference<>("");
    ActorRef<Topic.Command<PoolSummaries.Published>> topic = system.systemActorOf(
        Topic.create(PoolSummaries.Published.class, PoolSummaries.TOPIC), "kvrouter-pools-topic", Props.empty());
    PoolSummaries pools = new PoolSummaries(clock, config);
    system.systemActorOf(PoolSummaries.listener(pools, topic, config.staleAfter().dividedBy(4)), "kvrouter-pools",
        Props.empty());
    return new Regions(self, pools, config,
        new PoolPublisher(topic, self, config.summaryInterval(), ownEndpoints, advertised), ownEndpoints, advertised);
  }

  /** How long a global Book waits for a region that is not its last candidate. */
  public Duration bookAttemptTimeout() {
    return config.bookAttemptTimeout();
  }

  /** How this node's admission actors publish their pools' summaries. */
  public PoolPublisher publisher() {
    return publisher;
  }

  /**
   * Sets the router endpoint (gRPC host:port) this node's pool summaries carry, unless
   * {@code kvrouter.regions.endpoints} names one for this node's region (the server calls it once it has bound).
   */
  public void advertise(String endpoint) {
    if (!endpoint.isEmpty()) {
      advertised.set(endpoint);
      ownEndpoints.compareAndSet(List.of(), List.of(endpoint));
    }
  }

  /** This node's advertised gRPC endpoint, or empty before the server has bound. */
  public String advertised() {
    return advertised.get();
  }

  /**
   * The gRPC endpoint of the node hosting {@code model}'s admission actor in {@code region}, as that node's last
   * summary heard here names it (a new owner after a failover names itself with its first summary, of a newer
   * epoch); empty when no summary of the pool was heard or its node advertised none.
   */
  public String ownerEndpoint(String model, String region) {
    PoolSummary pool = pools.pool(model, region);
    return pool == null ? "" : pool.ownerEndpoint();
  }

  /**
   * The pools a global Book of {@code model} falls back to, best first by the global choice's order
   * ({@link io.kvrouter.core.regions.PoolChooser}), without {@code tried}'s regions.
   */
  public List<PoolSummary> fallbacks(String model, Set<String> tried) {
    List<PoolSummary> ranked = new ArrayList<>();
    for (PoolSummary pool : PoolChooser.ranked(pools.pools(model), pools.nowMillis(), pools.staleAfterMillis())) {
      if (!tried.contains(pool.region())) {
        ranked.add(pool);
      }
    }
    return ranked;
  }

  /** This node's region. */
  public String self() {
    return self;
  }

  public PoolSummaries pools() {
    return pools;
  }

  /** The pool a global call for {@code model} goes to when it is another region's; null when it is this one's or none. */
  public PoolSummary remotePool(String model) {
    PoolSummary pool = pools.choose(model);
    return pool == null || pool.region().equals(self) ? null : pool;
  }

  /** Where callers reach a region's routers: the configured endpoint, else what its pool's summaries carry. */
  public List<String> routerEndpoints(String region, PoolSummary pool) {
    String configured = config.endpoints().get(region);
    if (configured != null) {
      return List.of(configured);
    }
    if (region.equals(self)) {
      return ownEndpoints.get();
    }
    return pool == null ? List.of() : pool.routerEndpoints();
  }

  /** The first of {@link #routerEndpoints}, or empty. */
  public String routerEndpoint(String region, PoolSummary pool) {
    List<String> endpoints = routerEndpoints(region, pool);
    return endpoints.isEmpty() ? "" : endpoints.get(0);
  }

  /**
   * Why a regional call for {@code model} finds no worker on this node: FAILED_PRECONDITION MODEL_NOT_IN_REGION
   * when other regions have workers for it, else NOT_FOUND UNKNOWN_MODEL.
   */
  public RoutingError missingHere(String model) {
    Set<String> elsewhere = pools.regionsWithWorkers(model);
    elsewhere.remove(self);
    if (elsewhere.isEmpty()) {
      return RoutingError.unknownModel(model);
    }
    return new RoutingError(RoutingError.Code.FAILED_PRECONDITION, RoutingError.MODEL_NOT_IN_REGION,
        "model '" + RoutingError.echo(model) + "' has no workers in region " + self + "; regions with workers: "
            + String.join(", ", elsewhere) + "; use scope GLOBAL");
  }
}
