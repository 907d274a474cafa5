package io.kvrouter.server.grpc;

import static io.kvrouter.api.Stages.SAME_THREAD;

import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.PrefillMarked;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.Renewed;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterPowerApi;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.cluster.admission.BookCall;
import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.cluster.models.ModelSlot;
import io.kvrouter.cluster.regions.Regions;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.regions.PoolSummary;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.server.metrics.RouterMetrics;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.grpc.javadsl.Metadata;

/**
 * kvrouter.v1.Router. Select is answered on the handler's thread from the node's view (read once per call); Book and
 * the booking mutations go through the model's admission actor in the booking's region ({@link ModelClient}) with the
 * caller's deadline.
 *
 * <p>Both bindings call these methods: the caller's deadline comes from the request metadata ({@link Deadlines}), and
 * a binding that learns of a cancelled call cancels the returned stage.
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
      boolean global = in.getScope() == Scope.SCOPE_GLOBAL;
      PoolSummary remote = global ? regions.remotePool(in.getModel()) : null;
      if (remote != null) {
        // validated as any Select; not hashed (block size 0): nothing here uses the hashes
        mapping.toSelectionRequest(in, false, 0);
        return CompletableFuture.completedFuture(Selection.newBuilder()
            .setRegion(remote.region())
            .setRouterEndpoint(regions.routerEndpoint(remote.region(), remote))
            .setOwnerEndpoint(remote.ownerEndpoint())
            .build());
      }
      ModelSlot<ModelAdmission.Command> slot = cluster.slot(in.getModel());
      // the one read of the view: the request is hashed for it, picked on it and metered with it
      SelectionView view = slot == null ? null : slot.view();
      SelectionRequest request = mapping.toSelectionRequest(in, false, view);
      requireKnownHere(in.getModel(), view);
      String endpoint = global ? regions.routerEndpoint(regions.self(), null) : "";
      String owner = cluster.ownerEndpoint(in.getModel(), regions.self());
      Selection answer = in.getExplain() ? explained(slot.selectExplained(view, request), endpoint, owner)
          : ProtoMapping.toProto(slot.select(view, request), endpoint, owner);
      metrics.selected(in.getModel(), view, start);
      return CompletableFuture.completedFuture(answer);
    } catch (RuntimeException e) {
      Calls.rejected(metrics, RouterMetrics.SELECT, e);
      return CompletableFuture.failedFuture(e);
    }
  }

  private static Selection explained(ModelSlot.ExplainedSelection explained, String routerEndpoint,
      String ownerEndpoint) {
    Selection.Builder out = ProtoMapping.toProto(explained.result(), routerEndpoint, ownerEndpoint).toBuilder()
        .setExplanation(Explanations.toProto(explained.explanation()));
    if (explained.decodeExplanation() != null) {
      out.setDecodeExplanation(Explanations.toProto(explained.decodeExplanation()));
    }
    return out.build();
  }

  /**
   * Books through the admission actor of the booking's region: this node's, or for a global Book whose chosen pool
   * is another region's, that region's (through its sharding proxy). A global Book that a region does not answer
   * (REGION_UNREACHABLE) goes on to the next region by the global choice's order ({@link Regions#fallbacks}); every
   * region but the last candidate gets at most {@link Regions#bookAttemptTimeout} of the call's time, and the
   * attempt it abandons is undone there (CancelBook) like any timed-out Book. The answer is an
   * {@link AbandonableAnswer}: a binding that learns the call was cancelled abandons it (or cancels it), and the
   * facade then sends CancelBook for whatever this call booked, even when the booking was already answered.
   */
  @Override
  public CompletionStage<Booking> book(RouteRequest in, Metadata metadata) {
    long start = System.nanoTime();
    try {
      String model = in.getModel();
      RequestLimits.requireModel(model); // before any per-model lookup
      boolean global = in.getScope() == Scope.SCOPE_GLOBAL;
      PoolSummary remote = global ? regions.remotePool(model) : null;
      SelectionView view = remote == null ? cluster.view(model) : null;
      SelectionRequest request = remote == null ? mapping.toSelectionRequest(in, true, view)
          : mapping.toSelectionRequest(in, true, remote.blockSize());
      if (remote == null) {
        requireKnownHere(model, view);
      }
      Duration remaining = Deadlines.remaining(metadata);
      GlobalBook call = new GlobalBook(in, global, start,
          remaining == null ? -1 : start + remaining.toNanos());
      call.attempt(remote == null ? regions.self() : remote.region(), remote, request, view);
      return call.answer;
    } catch (RuntimeException e) {
      Calls.rejected(metrics, RouterMetrics.BOOK, e);
      return CompletableFuture.failedFuture(e);
    }
  }

  /** One Book call: its attempts, one region after another, and the answer the binding writes. */
  private final class GlobalBook {
    final RouteRequest in;
    final boolean global;
    final long startNanos;
    /** The caller's deadline on {@link System#nanoTime}, or -1 without one. */
    final long deadlineNanos;
    /** The regions a global Book tried (null for a regional one: it has no other). */
    final Set<String> tried;
    final AtomicReference<BookCall> current = new AtomicReference<>();
    final AbandonableAnswer<Booking> answer = new AbandonableAnswer<>(() -> current.get().abandon());

    GlobalBook(RouteRequest in, boolean global, long startNanos, long deadlineNanos) {
      this.in = in;
      this.global = global;
      this.startNanos = startNanos;
      this.deadlineNanos = deadlineNanos;
      this.tried = global ? new HashSet<>() : null;
      answer.whenComplete((done, failure) -> {
        if (answer.isCancelled()) {
          current.get().abandon();
        }
      });
    }

    /** Books {@code request} in {@code region} ({@code pool}: its summary, null for this node's region). */
    void attempt(String region, PoolSummary pool, SelectionRequest request, SelectionView view) {
      String model = in.getModel();
      if (global) {
        tried.add(region);
      }
      List<PoolSummary> next = global ? regions.fallbacks(model, tried) : List.of();
      BookCall booking;
      try {
        booking = cluster.client(model, region).book(request, attemptTime(!next.isEmpty()));
      } catch (RoutingException e) {
        // a region with no member left is refused before anything is sent
        if (!next.isEmpty() && unreachable(e) && timeLeft()) {
          fallBack(next.get(0));
          return;
        }
        throw e;
      }
      current.set(booking);
      if (answer.isCancelled()) {
        booking.abandon();
        return;
      }
      String routerEndpoint = global ? regions.routerEndpoint(region, pool) : "";
      booking.whenComplete((done, failure) -> {
        if (failure != null) {
          if (!next.isEmpty() && unreachable(failure) && timeLeft()) {
            fallBack(next.get(0));
            return;
          }
          Calls.rejected(metrics, RouterMetrics.BOOK, failure);
          answer.completeExceptionally(failure);
          return;
        }
        try {
          if (global) {
            // this node's copy of the booking's pool counts it until the pool's next summary
            regions.pools().booked(model, region, request.islTokens());
          }
          answer.complete(ProtoMapping.toProto(done, routerEndpoint, cluster.ownerEndpoint(model, region)));
          metrics.booked(model, view, startNanos, done.queuedMicros(), done.replay(), done.policyClass());
        } catch (RuntimeException e) {
          answer.completeExceptionally(e);
        }
      });
    }

    private void fallBack(PoolSummary pool) {
      try {
        if (pool.region().equals(regions.self())) {
          SelectionView view = cluster.view(in.getModel());
          SelectionRequest request = mapping.toSelectionRequest(in, true, view);
          requireKnownHere(in.getModel(), view);
          attempt(pool.region(), null, request, view);
        } else {
          attempt(pool.region(), pool, mapping.toSelectionRequest(in, true, pool.blockSize()), null);
        }
      } catch (RuntimeException e) {
        Calls.rejected(metrics, RouterMetrics.BOOK, e);
        answer.completeExceptionally(e);
      }
    }

    /** The time an attempt may take: what the caller has left, at most the attempt timeout when others follow. */
    private Duration attemptTime(boolean othersFollow) {
      Duration cap = othersFollow ? regions.bookAttemptTimeout() : null;
      if (deadlineNanos < 0) {
        return cap;
      }
      Duration left = Duration.ofNanos(deadlineNanos - System.nanoTime());
      return cap == null || left.compareTo(cap) < 0 ? left : cap;
    }

    private boolean timeLeft() {
      return deadlineNanos < 0 || deadlineNanos - System.nanoTime() > 0;
    }
  }

  private static boolean unreachable(Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    return cause instanceof RoutingException routing
        && RoutingError.REGION_UNREACHABLE.equals(routing.error().reason());
  }

  /** A regional call needs workers in this region: else MODEL_NOT_IN_REGION or UNKNOWN_MODEL. */
  private void requireKnownHere(String model, SelectionView view) {
    if (view == null || view.isEmpty()) {
      throw regions.missingHere(model).toException();
    }
  }

  @Override
  public CompletionStage<Released> release(BookingRef in, Metadata metadata) {
    return Calls.whenRejected(metrics, RouterMetrics.RELEASE, mutate(in, metadata, ModelClient::release)
        .thenApplyAsync(r -> {
          metrics.released(in.getModel(), r.applied());
          return Released.newBuilder().setApplied(r.applied()).build();
        }, SAME_THREAD));
  }

  @Override
  public CompletionStage<PrefillMarked> markPrefillDone(BookingRef in, Metadata metadata) {
    return Calls.whenRejected(metrics, RouterMetrics.MARK_PREFILL_DONE,
        mutate(in, metadata, ModelClient::markPrefillDone)
            .thenApplyAsync(r -> PrefillMarked.newBuilder().setApplied(r.applied()).build(), SAME_THREAD));
  }

  @Override
  public CompletionStage<Renewed> renew(BookingRef in, Metadata metadata) {
    return Calls.whenRejected(metrics, RouterMetrics.RENEW, mutate(in, metadata, ModelClient::renew)
        .thenApplyAsync(r -> Renewed.newBuilder().setApplied(r.applied())
            .setLeaseExpiresUnixMs(r.leaseExpiresAtMillis()).build(), SAME_THREAD));
  }

  /** A fenced booking mutation. */
  private interface Mutation {
    CompletionStage<MutationResult> apply(ModelClient client, String requestId, long attempt, Duration remaining);
  }

  /** Runs the mutation in the booking's region (BookingRef.region; empty: this node's). */
  private CompletionStage<MutationResult> mutate(BookingRef in, Metadata metadata, Mutation mutation) {
    return Calls.guard(() -> {
      RequestLimits.requireModel(in.getModel());
      RequestLimits.requireRequestId(in.getRequestId());
      RequestLimits.requireRegion(in.getRegion());
      return mutation.apply(cluster.client(in.getModel(), in.getRegion()), in.getRequestId(), in.getAttempt(),
          Deadlines.remaining(metadata));
    });
  }
}
