package io.kvrouter.server.grpc;

import static io.kvrouter.api.Stages.SAME_THREAD;

import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.PrefillMarked;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.Renewed;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterPowerApi;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.cluster.ModelClient;
import io.kvrouter.cluster.Regions;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.regions.PoolSummary;
import java.time.Duration;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.server.metrics.RouterMetrics;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.grpc.javadsl.Metadata;

/**
 * kvrouter.v1.Router. Select is answered on the handler's thread from the node's view; Book and the booking
 * mutations go through the model's admission actor with the caller's deadline.
 *
 * <p>Both bindings call these methods: the caller's deadline travels as {@code grpc-timeout} in the request metadata
 * ({@link Deadlines}), and a binding that learns of a cancelled call cancels the returned stage.
 */
public final class RouterService implements RouterPowerApi {
  private final RouterCluster cluster;
  private final ProtoMapping mapping;
  private final RouterMetrics metrics;
  private final Regions regions;

  public RouterService(RouterCluster cluster, ProtoMapping mapping, RouterMetrics metrics) {
    this.cluster = cluster;
    this.regions = cluster.regions();
    this.mapping = mapping;
    this.metrics = metrics;
  }

  /**
   * Advisory: answered on the calling thread; never reads a deadline. A global Select whose chosen pool is another
   * region's answers that region and its router endpoint, from this node's pool summaries alone.
   */
  @Override
  public CompletionStage<Selection> select(RouteRequest in, Metadata metadata) {
    long start = System.nanoTime();
    try {
      RequestLimits.requireModel(in.getModel()); // before any per-model lookup
      ModelClient client = cluster.client(in.getModel());
      SelectionView view = client.view();
      boolean global = in.getScope() == Scope.SCOPE_GLOBAL;
      PoolSummary remote = global ? remotePool(in.getModel()) : null;
      if (remote != null) {
        // validated as any Select; not hashed (block size 0): nothing here uses the hashes
        mapping.toSelectionRequest(in, false, 0);
        return CompletableFuture.completedFuture(Selection.newBuilder()
            .setRegion(remote.region())
            .setRouterEndpoint(regions.routerEndpoint(remote.region(), remote))
            .build());
      }
      SelectionRequest request = mapping.toSelectionRequest(in, false, view);
      requireKnownHere(client);
      String endpoint = global ? regions.routerEndpoint(regions.self(), null) : "";
      Selection answer = in.getExplain() ? explained(client.selectExplained(request), endpoint)
          : ProtoMapping.toProto(client.selectWithoutAdmission(request), endpoint);
      metrics.selected(in.getModel(), view, start);
      return CompletableFuture.completedFuture(answer);
    } catch (RuntimeException e) {
      rejected(RouterMetrics.SELECT, e);
      return CompletableFuture.failedFuture(e);
    }
  }

  private static Selection explained(ModelClient.ExplainedSelection explained, String routerEndpoint) {
    return ProtoMapping.toProto(explained.result(), routerEndpoint).toBuilder()
        .setExplanation(Explanations.toProto(explained.explanation())).build();
  }

  /**
   * Books through the admission actor (a global Book whose chosen pool is another region's: that region's, through
   * its sharding proxy). The answer is an {@link AbandonableAnswer}: a binding that learns the call was cancelled
   * abandons it (or cancels it), and the facade then sends CancelBook for whatever this call booked, even when the
   * booking was already answered.
   */
  @Override
  public CompletionStage<Booking> book(RouteRequest in, Metadata metadata) {
    long start = System.nanoTime();
    try {
      RequestLimits.requireModel(in.getModel()); // before any per-model lookup
      ModelClient client = cluster.client(in.getModel());
      SelectionView view = client.view();
      boolean global = in.getScope() == Scope.SCOPE_GLOBAL;
      PoolSummary remote = global ? remotePool(in.getModel()) : null;
      ModelClient.BookCall booking;
      String routerEndpoint;
      if (remote != null) {
        SelectionRequest request = mapping.toSelectionRequest(in, true, remote.blockSize());
        booking = regions.book(remote.region(), request, Deadlines.remaining(metadata));
        routerEndpoint = regions.routerEndpoint(remote.region(), remote);
      } else {
        SelectionRequest request = mapping.toSelectionRequest(in, true, view);
        requireKnownHere(client);
        booking = client.book(request, Deadlines.remaining(metadata));
        routerEndpoint = global ? regions.routerEndpoint(regions.self(), null) : "";
        if (global) {
          booking.thenRun(() -> regions.pools().booked(in.getModel(), regions.self(), request.islTokens()));
        }
      }
      AbandonableAnswer<Booking> answer = new AbandonableAnswer<>(booking::abandon);
      booking.whenComplete((done, failure) -> {
        if (failure != null) {
          rejected(RouterMetrics.BOOK, failure);
          answer.completeExceptionally(failure);
          return;
        }
        try {
          answer.complete(ProtoMapping.toProto(done, routerEndpoint));
          metrics.booked(in.getModel(), view, start, done.queuedMicros(), done.replay());
        } catch (RuntimeException e) {
          answer.completeExceptionally(e);
        }
      });
      answer.whenComplete((done, failure) -> {
        if (answer.isCancelled()) {
          booking.abandon();
        }
      });
      return answer;
    } catch (RuntimeException e) {
      rejected(RouterMetrics.BOOK, e);
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The pool a global call goes to when it is another region's; null when it is this region's or there is none. */
  private PoolSummary remotePool(String model) {
    PoolSummary pool = regions.pools().choose(model);
    return pool == null || pool.region().equals(regions.self()) ? null : pool;
  }

  /** A regional call needs workers in this region: else MODEL_NOT_IN_REGION or UNKNOWN_MODEL. */
  private void requireKnownHere(ModelClient client) {
    if (!client.isKnown()) {
      throw regions.missingHere(client.model()).toException();
    }
  }

  @Override
  public CompletionStage<Released> release(BookingRef in, Metadata metadata) {
    return counted(RouterMetrics.RELEASE, mutate(in, metadata, ModelClient::release, Regions::release)
        .thenApplyAsync(r -> {
          metrics.released(in.getModel(), r.applied());
          return Released.newBuilder().setApplied(r.applied()).build();
        }, SAME_THREAD));
  }

  @Override
  public CompletionStage<PrefillMarked> markPrefillDone(BookingRef in, Metadata metadata) {
    return counted(RouterMetrics.MARK_PREFILL_DONE,
        mutate(in, metadata, ModelClient::markPrefillDone, Regions::markPrefillDone)
            .thenApplyAsync(r -> PrefillMarked.newBuilder().setApplied(r.applied()).build(), SAME_THREAD));
  }

  @Override
  public CompletionStage<Renewed> renew(BookingRef in, Metadata metadata) {
    return counted(RouterMetrics.RENEW, mutate(in, metadata, ModelClient::renew, Regions::renew)
        .thenApplyAsync(r -> Renewed.newBuilder().setApplied(r.applied())
            .setLeaseExpiresUnixMs(r.leaseExpiresAtMillis()).build(), SAME_THREAD));
  }

  /** A booking mutation on this node's region. */
  private interface LocalMutation {
    CompletionStage<MutationResult> apply(ModelClient client, String requestId, long attempt, Duration remaining);
  }

  /** The same mutation relayed to another region. */
  private interface RemoteMutation {
    CompletionStage<MutationResult> apply(Regions regions, String region, String model, String requestId,
        long attempt, Duration remaining);
  }

  /** Runs the mutation in the booking's region: this node's when BookingRef.region is empty or names it. */
  private CompletionStage<MutationResult> mutate(BookingRef in, Metadata metadata, LocalMutation local,
      RemoteMutation remote) {
    return Calls.guard(() -> {
      String model = checked(in);
      Duration remaining = Deadlines.remaining(metadata);
      String region = in.getRegion();
      if (region.isEmpty() || region.equals(regions.self())) {
        return local.apply(cluster.client(model), in.getRequestId(), in.getAttempt(), remaining);
      }
      return remote.apply(regions, region, model, in.getRequestId(), in.getAttempt(), remaining);
    });
  }

  /** Counts the call's failure, if it fails; returns {@code call} itself (a binding may cancel it). */
  private <T> CompletionStage<T> counted(String method, CompletionStage<T> call) {
    call.whenComplete((done, failure) -> {
      if (failure != null) {
        rejected(method, failure);
      }
    });
    return call;
  }

  /** Counts a rejection; bad input (INVALID_ARGUMENT) is also logged, rate-limited. */
  private void rejected(String method, Throwable failure) {
    metrics.rejected(method, failure);
    RejectionLog.invalidArgument(method, failure);
  }

  private static String checked(BookingRef ref) {
    RequestLimits.requireModel(ref.getModel());
    RequestLimits.requireRequestId(ref.getRequestId());
    RequestLimits.requireRegion(ref.getRegion());
    return ref.getModel();
  }
}
