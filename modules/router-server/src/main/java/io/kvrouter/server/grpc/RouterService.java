package io.kvrouter.server.grpc;

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
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.selection.RequestLimits;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.grpc.javadsl.Metadata;

/**
 * kvrouter.v1.Router. Select is answered on the handler's thread from the node's view; Book and the booking
 * mutations go through the model's admission actor with the caller's deadline.
 *
 * <p>Every binding calls the same methods: the power-API methods read the deadline from the request metadata and
 * delegate to the overloads that take the remaining deadline ({@code null}: the caller sent none), which the other
 * bindings ({@link io.kvrouter.server.transport.Binding}) call directly.
 */
public final class RouterService implements RouterPowerApi {
  private static final Executor SAME_THREAD = Runnable::run;

  private final RouterCluster cluster;
  private final ProtoMapping mapping;

  public RouterService(RouterCluster cluster, ProtoMapping mapping) {
    this.cluster = cluster;
    this.mapping = mapping;
  }

  @Override
  public CompletionStage<Selection> select(RouteRequest in, Metadata metadata) {
    return select(in);
  }

  /** Advisory: answered on the calling thread; never reads a deadline. */
  public CompletionStage<Selection> select(RouteRequest in) {
    return Calls.guard(() -> {
      ModelClient queue = cluster.client(in.getModel());
      SelectionRequest request = mapping.toSelectionRequest(in, false, queue.view());
      return CompletableFuture.completedFuture(ProtoMapping.toProto(queue.selectWithoutAdmission(request)));
    });
  }

  @Override
  public CompletionStage<Booking> book(RouteRequest in, Metadata metadata) {
    return Calls.guard(() -> book(in, Deadlines.remaining(metadata)));
  }

  /**
   * Books through the admission actor. Cancelling the returned future (a binding does when its call is cancelled)
   * cancels the facade's, which then sends CancelBook for whatever this call booked.
   */
  public CompletionStage<Booking> book(RouteRequest in, Duration remaining) {
    return Calls.guard(() -> {
      ModelClient queue = cluster.client(in.getModel());
      SelectionRequest request = mapping.toSelectionRequest(in, true, queue.view());
      CompletableFuture<BookingAnswer> booking = queue.book(request, remaining);
      CompletableFuture<Booking> answer = booking.thenApplyAsync(ProtoMapping::toProto, SAME_THREAD);
      answer.whenComplete((done, failure) -> {
        if (answer.isCancelled()) {
          booking.cancel(false);
        }
      });
      return answer;
    });
  }

  @Override
  public CompletionStage<Released> release(BookingRef in, Metadata metadata) {
    return Calls.guard(() -> release(in, Deadlines.remaining(metadata)));
  }

  public CompletionStage<Released> release(BookingRef in, Duration remaining) {
    return Calls.guard(() -> cluster.client(checked(in)).release(in.getRequestId(), in.getAttempt(), remaining)
        .thenApplyAsync(r -> Released.newBuilder().setApplied(r.applied()).build(), SAME_THREAD));
  }

  @Override
  public CompletionStage<PrefillMarked> markPrefillDone(BookingRef in, Metadata metadata) {
    return Calls.guard(() -> markPrefillDone(in, Deadlines.remaining(metadata)));
  }

  public CompletionStage<PrefillMarked> markPrefillDone(BookingRef in, Duration remaining) {
    return Calls.guard(() -> cluster.client(checked(in)).markPrefillDone(in.getRequestId(), in.getAttempt(), remaining)
        .thenApplyAsync(r -> PrefillMarked.newBuilder().setApplied(r.applied()).build(), SAME_THREAD));
  }

  @Override
  public CompletionStage<Renewed> renew(BookingRef in, Metadata metadata) {
    return Calls.guard(() -> renew(in, Deadlines.remaining(metadata)));
  }

  public CompletionStage<Renewed> renew(BookingRef in, Duration remaining) {
    return Calls.guard(() -> cluster.client(checked(in)).renew(in.getRequestId(), in.getAttempt(), remaining)
        .thenApplyAsync(r -> Renewed.newBuilder().setApplied(r.applied())
            .setLeaseExpiresUnixMs(r.leaseExpiresAtMillis()).build(), SAME_THREAD));
  }

  private static String checked(BookingRef ref) {
    RequestLimits.requireModel(ref.getModel());
    if (ref.getRequestId().isEmpty()) {
      throw RoutingError.invalid(RoutingError.EMPTY_REQUEST_ID, "request_id must not be empty").toException();
    }
    return ref.getModel();
  }
}
