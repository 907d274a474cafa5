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

  public RouterService(RouterCluster cluster, ProtoMapping mapping, RouterMetrics metrics) {
    this.cluster = cluster;
    this.mapping = mapping;
    this.metrics = metrics;
  }

  /** Advisory: answered on the calling thread; never reads a deadline. */
  @Override
  public CompletionStage<Selection> select(RouteRequest in, Metadata metadata) {
    long start = System.nanoTime();
    try {
      RequestLimits.requireModel(in.getModel()); // before any per-model lookup
      ModelClient client = cluster.client(in.getModel());
      SelectionView view = client.view();
      SelectionRequest request = mapping.toSelectionRequest(in, false, view);
      Selection answer = in.getExplain() ? explained(client.selectExplained(request))
          : ProtoMapping.toProto(client.selectWithoutAdmission(request));
      metrics.selected(in.getModel(), view, start);
      return CompletableFuture.completedFuture(answer);
    } catch (RuntimeException e) {
      rejected(RouterMetrics.SELECT, e);
      return CompletableFuture.failedFuture(e);
    }
  }

  private static Selection explained(ModelClient.ExplainedSelection explained) {
    return ProtoMapping.toProto(explained.result()).toBuilder()
        .setExplanation(Explanations.toProto(explained.explanation())).build();
  }

  /**
   * Books through the admission actor. The answer is an {@link AbandonableAnswer}: a binding that learns the call was
   * cancelled abandons it (or cancels it), and the facade then sends CancelBook for whatever this call booked, even
   * when the booking was already answered.
   */
  @Override
  public CompletionStage<Booking> book(RouteRequest in, Metadata metadata) {
    long start = System.nanoTime();
    try {
      RequestLimits.requireModel(in.getModel()); // before any per-model lookup
      ModelClient client = cluster.client(in.getModel());
      SelectionView view = client.view();
      SelectionRequest request = mapping.toSelectionRequest(in, true, view);
      ModelClient.BookCall booking = client.book(request, Deadlines.remaining(metadata));
      AbandonableAnswer<Booking> answer = new AbandonableAnswer<>(booking::abandon);
      booking.whenComplete((done, failure) -> {
        if (failure != null) {
          rejected(RouterMetrics.BOOK, failure);
          answer.completeExceptionally(failure);
          return;
        }
        try {
          answer.complete(ProtoMapping.toProto(done));
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

  @Override
  public CompletionStage<Released> release(BookingRef in, Metadata metadata) {
    return counted(RouterMetrics.RELEASE, Calls.guard(() -> cluster.client(checked(in))
        .release(in.getRequestId(), in.getAttempt(), Deadlines.remaining(metadata))
        .thenApplyAsync(r -> {
          metrics.released(in.getModel(), r.applied());
          return Released.newBuilder().setApplied(r.applied()).build();
        }, SAME_THREAD)));
  }

  @Override
  public CompletionStage<PrefillMarked> markPrefillDone(BookingRef in, Metadata metadata) {
    return counted(RouterMetrics.MARK_PREFILL_DONE, Calls.guard(() -> cluster.client(checked(in))
        .markPrefillDone(in.getRequestId(), in.getAttempt(), Deadlines.remaining(metadata))
        .thenApplyAsync(r -> PrefillMarked.newBuilder().setApplied(r.applied()).build(), SAME_THREAD)));
  }

  @Override
  public CompletionStage<Renewed> renew(BookingRef in, Metadata metadata) {
    return counted(RouterMetrics.RENEW, Calls.guard(() -> cluster.client(checked(in))
        .renew(in.getRequestId(), in.getAttempt(), Deadlines.remaining(metadata))
        .thenApplyAsync(r -> Renewed.newBuilder().setApplied(r.applied())
            .setLeaseExpiresUnixMs(r.leaseExpiresAtMillis()).build(), SAME_THREAD)));
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
    return ref.getModel();
  }
}
