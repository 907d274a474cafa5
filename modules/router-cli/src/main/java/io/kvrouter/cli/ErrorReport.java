package io.kvrouter.cli;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.ReasonTrailer;
import java.util.Optional;

/** Turns a failed call into the CLI's one-line error: {@code ERROR <STATUS> <reason>: <description>}. */
public final class ErrorReport {

  private ErrorReport() {}

  /** A gRPC failure: its status, the server's reason (may be empty) and the description (may be empty). */
  public record Failure(Status.Code code, String reason, String description) {
    /** {@code ERROR NOT_FOUND UNKNOWN_MODEL: no such model 'm'}; the reason is left out when the server sent none. */
    public String line() {
      StringBuilder sb = new StringBuilder("ERROR ").append(code.name());
      if (!reason.isEmpty()) {
        sb.append(' ').append(reason);
      }
      sb.append(": ").append(description.isEmpty() ? "(no description)" : description);
      return sb.toString();
    }
  }

  /** Finds a gRPC status in the cause chain (the client wraps it in CompletionException or ExecutionException). */
  public static Optional<Failure> find(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof StatusRuntimeException sre) {
        return Optional.of(of(sre.getStatus(), sre.getTrailers()));
      }
      if (c instanceof StatusException se) {
        return Optional.of(of(se.getStatus(), se.getTrailers()));
      }
    }
    return Optional.empty();
  }

  static Failure of(Status status, Metadata trailers) {
    String reason = ReasonTrailer.of(trailers);
    String description = status.getDescription();
    if ((description == null || description.isEmpty()) && status.getCause() != null) {
      description = status.getCause().toString();
    }
    return new Failure(status.getCode(), reason == null ? "" : reason.trim(), description == null ? "" : description);
  }
}
