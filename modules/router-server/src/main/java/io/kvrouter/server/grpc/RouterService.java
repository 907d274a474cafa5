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

  public RouterService(RouterCluster cluster, ProtoMapping mapping) {
    this.cluster = cluster;
    this.mapping = mapping;
  }

  /** Advisory: answered on the calling thread; never reads a deadline. */
  @Override
  public CompletionStage<Selection> select(RouteRequest in, Metadata metadata) {
    return Calls.guard(() -> {
      RequestLimits.requireModel(in.getModel()); // before any per-model lookup
      ModelClient client = cluster.client(in.getModel());
      SelectionRequest request = mapping.toSelectionRequest(in, false, client.view());
      return CompletableFuture.completedFuture(ProtoMapping.toProto(client.selectWithoutAdmission(request)));
    });
  }

  /**
   * Books through the admission actor. The answer is an {@link AbandonableAnswer}: a binding that learns the call was
   * cancelled abandons it (or cancels it), and the facade then sends CancelBook for whatever this call booked, even
   * when the booking was already answered.
   */
  @Override
  public CompletionStage<Booking> book(RouteRequest in, Metadata metadata) {
    return Calls.guard(() -> {
      RequestLimits.requireModel(in.getModel()); // before any per-model lookup
      ModelClient client = cluster.client(in.getModel());
      SelectionRequest request = mapping.toSelectionRequest(in, true, client.view());
      ModelClient.BookCall booking = client.book(request, Deadlines.remaining(metadata));
      AbandonableAnswer<Booking> answer = new AbandonableAnswer<>(booking::abandon);
      booking.whenComplete((done, failure) -> {
        if (failure != null) {
          answer.completeExceptionally(failure);
          return;
        }
        try {
          answer.complete(ProtoMapping.toProto(done));
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
    });
  }

  @Override
  public CompletionStage<Released> release(BookingRef in, Metadata metadata) {
    return Calls.guard(() -> cluster.client(checked(in))
        .release(in.getRequestId(), in.getAttempt(), Deadlines.remaining(metadata))
        .thenApplyAsync(r -> Released.newBuilder().setApplied(r.applied()).build(), SAME_THREAD));
  }

  @Override
  public CompletionStage<PrefillMarked> markPrefillDone(BookingRef in, Metadata metadata) {
    return Calls.guard(() -> cluster.client(checked(in))
        .markPrefillDone(in.getRequestId(), in.getAttempt(), Deadlines.remaining(metadata))
        .thenApplyAsync(r -> PrefillMarked.newBuilder().setApplied(r.applied()).build(), SAME_THREAD));
  }

  @Override
  public CompletionStage<Renewed> renew(BookingRef in, Metadata metadata) {
    return Calls.guard(() -> cluster.client(checked(in))
        .renew(in.getRequestId(), in.getAttempt(), Deadlines.remaining(metadata))
        .thenApplyAsync(r -> Renewed.newBuilder().setApplied(r.applied())
            .setLeaseExpiresUnixMs(r.leaseExpiresAtMillis()).build(), SAME_THREAD));
  }

  private static String checked(BookingRef ref) {
    RequestLimits.requireModel(ref.getModel());
    RequestLimits.requireRequestId(ref.getRequestId());
    return ref.getModel();
  }
}
