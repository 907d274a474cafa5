package io.kvrouter.cli;

import io.grpc.Status;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterClient;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@code book --owner-direct}: a Select on the target names the model's owner node (Selection.owner_endpoint); the
 * Book goes there (to the target when the Select names none or fails), and to the target again when that node
 * cannot be reached (UNAVAILABLE without a kvrouter-reason:
 * the call never reached a router's logic), with the same request id and the next retry number, so the router
 * never books it twice.
 */
final class OwnerDirect {
  private OwnerDirect() {}

  /** A booking and the client of the node that answered it (where its Release goes). */
  record Booked(Booking booking, RouterClient by) {}

  static CompletionStage<Booked> book(CliSession session, RouteRequest request) {
    RouterClient target = session.router();
    // a Select the target refuses (an overloaded pool, say, where a Book would queue) names no owner: book there
    return target.select(request)
        .handle((selection, failure) -> failure == null ? selection.getOwnerEndpoint() : "")
        .thenCompose(owner -> owner.isEmpty() || owner.equals(session.target())
            ? target.book(request).thenApply(b -> new Booked(b, target))
            : bookAt(session.router(owner), target, request));
  }

  /** Books at the owner; when it cannot be reached, at the target with the next retry number. */
  private static CompletionStage<Booked> bookAt(RouterClient owner, RouterClient target, RouteRequest request) {
    CompletableFuture<Booked> booked = new CompletableFuture<>();
    owner.book(request).whenComplete((booking, failure) -> {
      if (failure == null) {
        booked.complete(new Booked(booking, owner));
      } else if (unreachable(failure)) {
        target.book(request.toBuilder().setRetry(request.getRetry() + 1).build()).whenComplete((again, failed) -> {
          if (failed == null) {
            booked.complete(new Booked(again, target));
          } else {
            booked.completeExceptionally(failed);
          }
        });
      } else {
        booked.completeExceptionally(failure);
      }
    });
    return booked;
  }

  /** The owner could not be reached: a transport failure, not a router's answer. */
  static boolean unreachable(Throwable failure) {
    Optional<ErrorReport.Failure> status = ErrorReport.find(failure);
    return status.isPresent() && status.get().code() == Status.Code.UNAVAILABLE && status.get().reason().isEmpty();
  }
}
