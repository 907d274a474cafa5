package io.kvrouter.server.grpc;

import io.grpc.Status;
import io.kvrouter.core.selection.RoutingError;
import io.kvrouter.core.selection.RoutingException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.grpc.GrpcServiceException;
import org.apache.pekko.grpc.Trailers;
import org.apache.pekko.grpc.javadsl.GrpcExceptionHandler;
import org.apache.pekko.grpc.javadsl.MetadataBuilder;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;

/**
 * Maps failures onto gRPC statuses. Every rejection carries its machine-readable reason in the
 * {@value #REASON_KEY} trailer and a human-readable description.
 */
public final class GrpcErrors {
  public static final String REASON_KEY = "kvrouter-reason";

  private GrpcErrors() {}

  public static Status.Code toStatus(RoutingError.Code code) {
    return switch (code) {
      case INVALID_ARGUMENT -> Status.Code.INVALID_ARGUMENT;
      case NOT_FOUND -> Status.Code.NOT_FOUND;
      case ALREADY_EXISTS -> Status.Code.ALREADY_EXISTS;
      case FAILED_PRECONDITION -> Status.Code.FAILED_PRECONDITION;
      case UNAVAILABLE -> Status.Code.UNAVAILABLE;
      case RESOURCE_EXHAUSTED -> Status.Code.RESOURCE_EXHAUSTED;
      case DEADLINE_EXCEEDED -> Status.Code.DEADLINE_EXCEEDED;
      case UNAUTHENTICATED -> Status.Code.UNAUTHENTICATED;
      case PERMISSION_DENIED -> Status.Code.PERMISSION_DENIED;
    };
  }

  public static Trailers trailers(RoutingError error) {
    return new Trailers(Status.fromCode(toStatus(error.code())).withDescription(error.message()),
        new MetadataBuilder().addText(REASON_KEY, error.reason()).build());
  }

  /** The exception handler given to every generated service handler. */
  public static org.apache.pekko.japi.Function<ActorSystem, org.apache.pekko.japi.Function<Throwable, Trailers>>
      handler() {
    return system -> failure -> toTrailers(failure, system);
  }

  static Trailers toTrailers(Throwable failure, ActorSystem system) throws Exception {
    Throwable cause = unwrap(failure);
    if (cause instanceof RoutingException routing) {
      return trailers(routing.error());
    }
    if (cause instanceof EntityStreamSizeException tooLarge) {
      return trailers(new RoutingError(RoutingError.Code.RESOURCE_EXHAUSTED, RoutingError.MESSAGE_TOO_LARGE,
          "request message larger than the server's limit of " + tooLarge.limit() + " bytes"));
    }
    if (cause instanceof GrpcServiceException grpc) {
      return new Trailers(grpc.status(), grpc.getMetadata());
    }
    return GrpcExceptionHandler.defaultMapper().apply(system).apply(cause);
  }

  private static Throwable unwrap(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
