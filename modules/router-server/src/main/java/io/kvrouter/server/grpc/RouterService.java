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
import io.kvrouter.core.regions.PoolSummary;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.server.metrics.RouterMetrics;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
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
            .build());
      }
      ModelSlot<ModelAdmission.Command> slot = cluster.slot(in.getModel());
      // the one read of the view: the request is hashed for it, picked on it and metered with it
      SelectionView view = slot == null ? null : slot.view();
      SelectionRequest request = mapping.toSelectionRequest(in, false, view);
      requireKnownHere(in.getModel(), view);
      String endpoint = global ? regions.routerEndpoint(regions.self(), null) : "";
      Selection answer = in.getExplain() ? explained(slot.selectExplained(view, request), endpoint)
          : ProtoMapping.toProto(slot.select(view, request), endpoint);
      metrics.selected(in.getModel(), view, start);
      return CompletableFuture.completedFuture(answer);
    } catch (RuntimeException e) {
      Calls.rejected(metrics, RouterMetrics.SELECT, e);
      return CompletableFuture.failedFuture(e);
    }
  }

  private static Selection explained(ModelSlot.ExplainedSelection explained, String routerEndpoint) {
    Selection.Builder out = ProtoMapping.toProto(explained.result(), routerEndpoint).toBuilder()
        .setExplanation(Explanations.toProto(explained.explanation()));
    if (explained.decodeExplanation() != null) {
      out.setDecodeExplanation(Explanations.toProto(explained.decodeExplanation()));
    }
    return out.build();
  }

  /**
   * Books through the admission actor of the booking's region: this node's, or for a global Book whose chosen pool
   * is another region's, that region's (through its sharding proxy). The answer is an {@link AbandonableAnswer}: a
   * binding that learns the call was cancelled abandons it (or cancels it), and the facade then sends CancelBook for
   * whatever this call booked, even when the booking was already answered.
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
      String region = remote == null ? regions.self() : remote.region();
      BookCall booking = cluster.client(model, region).book(request, Deadlines.remaining(metadata));
      String routerEndpoint = global ? regions.routerEndpoint(region, remote) : "";
      if (global) {
        // this node's copy of the chosen pool counts the booking until the pool's next summary
        booking.thenRun(() -> regions.pools().booked(model, region, request.islTokens()));
      }
      AbandonableAnswer<Booking> answer = new AbandonableAnswer<>(booking::abandon);
      booking.whenComplete((done, failure) -> {
        if (failure != null) {
          Calls.rejected(metrics, RouterMetrics.BOOK, failure);
          answer.completeExceptionally(failure);
          return;
        }
        try {
          answer.complete(ProtoMapping.toProto(done, routerEndpoint));
          metrics.booked(model, view, start, done.queuedMicros(), done.replay(), done.policyClass());
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
      Calls.rejected(metrics, RouterMetrics.BOOK, e);
      return CompletableFuture.failedFuture(e);
    }
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
