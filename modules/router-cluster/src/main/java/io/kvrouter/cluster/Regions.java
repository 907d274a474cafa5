package io.kvrouter.cluster;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.membership.Registered;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.regions.PoolSummary;
import io.kvrouter.core.selection.SelectionRequest;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * A node's view of the other regions: the pools it heard of ({@link PoolSummaries}), the router endpoint of each
 * region, and calls relayed to another region's admission actor through a sharding proxy for that data center (one
 * per region, started the first time a call needs it). Nothing here asks a remote actor for a Select.
 */
public final class Regions {
  private final String self;
  private final PoolSummaries pools;
  private final RegionsConfig config;
  private final AdmissionConfig admission;
  private final ClusterSharding sharding;
  private final Cluster cluster;
  /** This node's router endpoint(s) as its summaries carry them. */
  private final AtomicReference<List<String>> ownEndpoints;
  /** The regions whose sharding proxy runs on this node. */
  private final ConcurrentHashMap<String, Boolean> proxies = new ConcurrentHashMap<>();

  Regions(String self, PoolSummaries pools, RegionsConfig config, AdmissionConfig admission,
      ClusterSharding sharding, Cluster cluster, AtomicReference<List<String>> ownEndpoints) {
    this.self = self;
    this.pools = pools;
    this.config = config;
    this.admission = admission;
    this.sharding = sharding;
    this.cluster = cluster;
    this.ownEndpoints = ownEndpoints;
  }

  /** This node's region. */
  public String self() {
    return self;
  }

  public PoolSummaries pools() {
    return pools;
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

  // ---- calls relayed to another region's admission actor

  /**
   * Books {@code request} on a worker of {@code region} through that region's admission actor; the answer is counted
   * in this node's copy of the region's pool. No answer in time: UNAVAILABLE REGION_UNREACHABLE. As with a local
   * Book, a timeout, a cancel or an {@link ModelClient.BookCall#abandon} sends a CancelBook that undoes whatever the
   * Book made there.
   */
  public ModelClient.BookCall book(String region, SelectionRequest request, Duration remaining) {
    String model = request.model();
    EntityRef<ModelAdmission.Command> target;
    try {
      target = entity(region, model);
    } catch (RoutingException e) {
      return ModelClient.BookCall.failed(e);
    }
    // the other region's admission clock is not this node's: the ask's timeout bounds the call (0: no queue deadline)
    ModelClient.BookCall call = ModelClient.BookCall.start(request, remaining, admission, target::tell,
        (nonce, timeout) -> target.ask(replyTo -> new ModelAdmission.Book(request, nonce, 0, replyTo), timeout),
        failure -> unreachableIfTimeout(region, model, failure), answer -> answer);
    call.thenRun(() -> pools.booked(model, region, request.islTokens()));
    return call;
  }

  public CompletionStage<MutationResult> release(String region, String model, String requestId, long attempt,
      Duration remaining) {
    return mutate(region, model, remaining, replyTo -> new ModelAdmission.Release(requestId, attempt, replyTo));
  }

  public CompletionStage<MutationResult> markPrefillDone(String region, String model, String requestId, long attempt,
      Duration remaining) {
    return mutate(region, model, remaining,
        replyTo -> new ModelAdmission.MarkPrefillDone(requestId, attempt, replyTo));
  }

  public CompletionStage<MutationResult> renew(String region, String model, String requestId, long attempt,
      Duration remaining) {
    return mutate(region, model, remaining, replyTo -> new ModelAdmission.Renew(requestId, attempt, replyTo));
  }

  /** Registers a worker of another region with that region's admission actor (this node keeps no view of it). */
  public CompletionStage<Registered> register(WorkerConfig worker, String model, Duration remaining) {
    String region = worker.region();
    return guard(() -> relay(region, model, entity(region, model).<ModelAdmission.RegisterReply>ask(
        replyTo -> new ModelAdmission.Register(worker, replyTo), admission.askTimeout(remaining)), reply -> {
          if (reply.error() != null) {
            throw reply.error().toException();
          }
          return reply.registered();
        }));
  }

  private CompletionStage<MutationResult> mutate(String region, String model, Duration remaining,
      org.apache.pekko.japi.function.Function<ActorRef<ModelAdmission.MutationReply>, ModelAdmission.Command> message) {
    return guard(() -> relay(region, model, entity(region, model).ask(message, admission.askTimeout(remaining)),
        ModelAdmission.MutationReply::result));
  }

  /** {@code call}'s stage, or a failed one if starting it threw (e.g. an unknown region). */
  private static <T> CompletionStage<T> guard(Supplier<CompletionStage<T>> call) {
    try {
      return call.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The reply mapped by {@code onReply}; a timeout fails REGION_UNREACHABLE. */
  private <R, T> CompletionStage<T> relay(String region, String model, CompletionStage<R> ask,
      Function<R, T> onReply) {
    CompletableFuture<T> result = new CompletableFuture<>();
    ask.whenComplete((reply, failure) -> {
      if (failure != null) {
        result.completeExceptionally(unreachableIfTimeout(region, model, failure));
      } else {
        try {
          result.complete(onReply.apply(reply));
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
        }
      }
    });
    return result;
  }

  /**
   * The admission actor of {@code model} in {@code region}, through that data center's sharding proxy (started
   * here on first use). A region no member of the cluster belongs to is refused before any proxy starts, so a
   * caller's made-up region names cost nothing.
   */
  EntityRef<ModelAdmission.Command> entity(String region, String model) {
    if (region.equals(self)) {
      return sharding.entityRefFor(ModelAdmission.ENTITY_KEY, model);
    }
    if (!proxies.containsKey(region) && !cluster.state().getAllDataCenters().contains(region)) {
      throw unreachable(region, model, "has no member in the cluster").toException();
    }
    // concurrent first calls wait for the one that starts the proxy
    proxies.computeIfAbsent(region, r -> {
      // a proxy hosts no entity: its behaviour factory never runs
      sharding.init(Entity.of(ModelAdmission.ENTITY_KEY, ctx -> Behaviors.<ModelAdmission.Command>empty())
          .withDataCenter(r));
      return Boolean.TRUE;
    });
    return sharding.entityRefFor(ModelAdmission.ENTITY_KEY, model, region);
  }

  /** An ask's failure: REGION_UNREACHABLE for its timeout, else its cause. */
  private static Throwable unreachableIfTimeout(String region, String model, Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    return cause instanceof TimeoutException ? unreachable(region, model, "did not answer in time").toException()
        : cause;
  }

  private static RoutingError unreachable(String region, String model, String what) {
    return RoutingError.unavailable(RoutingError.REGION_UNREACHABLE, "region " + RoutingError.echo(region)
        + " " + what + " (model '" + RoutingError.echo(model) + "')");
  }
}
