package io.kvrouter.server.grpc;

import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.Stages;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import java.nio.charset.StandardCharsets;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.grpc.GrpcServiceException;
import org.apache.pekko.grpc.Trailers;
import org.apache.pekko.grpc.javadsl.GrpcExceptionHandler;
import org.apache.pekko.grpc.javadsl.BytesEntry;
import org.apache.pekko.grpc.javadsl.MetadataBuilder;
import org.apache.pekko.grpc.javadsl.MetadataEntry;
import org.apache.pekko.grpc.javadsl.StringEntry;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;

/**
 * Maps failures onto gRPC statuses, for both bindings. Every rejection carries its machine-readable reason in the
 * {@link ReasonTrailer} and a human-readable description.
 */
public final class StatusMapping {
  private StatusMapping() {}

  /**
   * The longest status description sent, whatever produced it: messages quote input through
   * {@link RoutingError#echo}, and this bounds the rest (a failure's own text), since the description travels as
   * the grpc-message header and an oversized header fails the whole connection on some clients.
   */
  static final int MAX_DESCRIPTION = 1_024;

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

  /**
   * The status, its description and trailers: the reason in {@link ReasonTrailer}, and each of the error's details
   * as {@code kvrouter-<key>} (a QUEUE_LIMIT: {@code kvrouter-policy-class}, {@code kvrouter-limit-kind},
   * {@code kvrouter-limit-current}, {@code kvrouter-limit}).
   */
  public static Trailers trailers(RoutingError error) {
    MetadataBuilder metadata = new MetadataBuilder().addText(ReasonTrailer.NAME, error.reason());
    error.details().forEach((key, value) -> metadata.addText(DETAIL_PREFIX + key, value));
    return new Trailers(Status.fromCode(toStatus(error.code())).withDescription(error.message()), metadata.build());
  }

  /** The trailer name of a rejection's detail {@code key}. */
  public static final String DETAIL_PREFIX = "kvrouter-";

  /** RESOURCE_EXHAUSTED MESSAGE_TOO_LARGE, for a request over {@code limit} bytes (on every binding). */
  public static RoutingError messageTooLarge(long limit) {
    return logged(new RoutingError(RoutingError.Code.RESOURCE_EXHAUSTED, RoutingError.MESSAGE_TOO_LARGE,
        "request message larger than the server's limit of " + limit + " bytes"));
  }

  /** INVALID_ARGUMENT MALFORMED, for a request body that is not a valid protobuf message of its type. */
  public static RoutingError malformedBody(String detail) {
    return logged(RoutingError.invalid(RoutingError.MALFORMED,
        "request message is not a valid protobuf message: " + RoutingError.echo(detail)));
  }

  /** A call refused by the router's token check (UNAUTHENTICATED, PERMISSION_DENIED), logged rate-limited. */
  public static RoutingError accessDenied(RoutingError error) {
    return logged(error);
  }

  /** Bodies the transport rejects are logged, rate-limited (the rest of bad input is the caller's business). */
  private static RoutingError logged(RoutingError error) {
    RejectionLog.rejected(error.reason(), error.message());
    return error;
  }

  /** The exception handler given to every generated service handler. */
  public static org.apache.pekko.japi.Function<ActorSystem, org.apache.pekko.japi.Function<Throwable, Trailers>>
      handler() {
    return system -> failure -> forPekkoGrpc(toTrailers(failure, system));
  }

  /**
   * Pekko gRPC 1.1.1 builds its grpc-message header through the header's parser, which percent-decodes the text it
   * is given (and turns every non-ASCII character into '?' when the text holds a '%'), then percent-encodes it when
   * rendering. Handing it the already encoded description (plain ASCII) makes that round trip exact, so any message
   * arrives intact. TransportTest checks this on every binding.
   */
  private static Trailers forPekkoGrpc(Trailers trailers) {
    String description = trailers.getStatus().getDescription();
    if (description == null) {
      return trailers;
    }
    String encoded = percentEncode(description);
    return encoded.equals(description) ? trailers
        : new Trailers(trailers.getStatus().withDescription(encoded), trailers.getMetadata());
  }

  static Trailers toTrailers(Throwable failure, ActorSystem system) throws Exception {
    Trailers trailers = unbounded(failure, system);
    String description = trailers.getStatus().getDescription();
    return description == null || description.length() <= MAX_DESCRIPTION ? trailers
        : new Trailers(trailers.getStatus().withDescription(RoutingError.truncate(description, MAX_DESCRIPTION)),
            trailers.getMetadata());
  }

  private static Trailers unbounded(Throwable failure, ActorSystem system) throws Exception {
    Throwable cause = Stages.unwrap(failure);
    if (cause instanceof RoutingException routing) {
      return trailers(routing.error());
    }
    if (cause instanceof EntityStreamSizeException tooLarge) {
      return trailers(messageTooLarge(tooLarge.limit()));
    }
    if (cause instanceof InvalidProtocolBufferException malformed) {
      return trailers(malformedBody(malformed.getMessage()));
    }
    if (cause instanceof GrpcServiceException grpc) {
      return new Trailers(grpc.status(), grpc.getMetadata());
    }
    return GrpcExceptionHandler.defaultMapper().apply(system).apply(cause);
  }

  /**
   * The same mapping as {@link #handler()}, as a grpc-java status with its trailers, for the NETTY binding.
   */
  public static StatusRuntimeException toStatusException(Throwable failure, ActorSystem system) {
    Trailers trailers;
    try {
      trailers = toTrailers(failure, system);
    } catch (Exception e) {
      trailers = new Trailers(Status.INTERNAL.withDescription("failure while mapping " + failure));
    }
    io.grpc.Metadata metadata = new io.grpc.Metadata();
    for (var entry : trailers.getMetadata().asList()) {
      String key = entry.first();
      MetadataEntry value = entry.second();
      if (value instanceof StringEntry text) {
        metadata.put(io.grpc.Metadata.Key.of(key, io.grpc.Metadata.ASCII_STRING_MARSHALLER), text.getValue());
      } else if (value instanceof BytesEntry bytes) {
        metadata.put(io.grpc.Metadata.Key.of(key, io.grpc.Metadata.BINARY_BYTE_MARSHALLER),
            bytes.getValue().toArray());
      }
    }
    return trailers.getStatus().asRuntimeException(metadata);
  }

  /**
   * Percent-encodes a grpc-message per the gRPC HTTP/2 spec: the UTF-8 bytes outside printable ASCII (0x20–0x7E),
   * and '%' itself, as %XX.
   */
  static String percentEncode(String message) {
    boolean plain = true;
    for (int i = 0; i < message.length() && plain; i++) {
      char c = message.charAt(i);
      plain = c >= ' ' && c <= '~' && c != '%';
    }
    if (plain) {
      return message;
    }
    byte[] utf8 = message.getBytes(StandardCharsets.UTF_8);
    StringBuilder out = new StringBuilder(utf8.length * 2);
    for (byte b : utf8) {
      int v = b & 0xff;
      if (v >= ' ' && v <= '~' && v != '%') {
        out.append((char) v);
      } else {
        out.append('%').append(Character.toUpperCase(Character.forDigit(v >>> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(v & 0xf, 16)));
      }
    }
    return out.toString();
  }
}
