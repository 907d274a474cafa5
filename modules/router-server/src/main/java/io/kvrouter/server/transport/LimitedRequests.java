package io.kvrouter.server.transport;

import io.grpc.Attributes;
import io.grpc.KnownLength;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.server.grpc.StatusMapping;
import io.kvrouter.server.metrics.RouterMetrics;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import org.apache.pekko.actor.ActorSystem;

/**
 * Re-binds a generated service definition with a request marshaller of ours. grpc-java answers a marshaller that
 * throws with UNKNOWN; here a request over the limit or one that does not parse becomes a {@link Inbound} carrying
 * the rejection, and the call is closed with our status and reason (RESOURCE_EXHAUSTED MESSAGE_TOO_LARGE,
 * INVALID_ARGUMENT MALFORMED) before the generated handler sees a message. Descriptors keep their schema, so server
 * reflection still describes every method.
 */
final class LimitedRequests {
  private LimitedRequests() {}

  static ServerServiceDefinition rebind(ServerServiceDefinition service, long limit, ActorSystem system,
      RouterMetrics metrics) {
    ServiceDescriptor original = service.getServiceDescriptor();
    ServiceDescriptor.Builder descriptor = ServiceDescriptor.newBuilder(original.getName())
        .setSchemaDescriptor(original.getSchemaDescriptor());
    var methods = service.getMethods().stream().map(method -> limited(method, limit, system, metrics)).toList();
    methods.forEach(method -> descriptor.addMethod(method.getMethodDescriptor()));
    ServerServiceDefinition.Builder definition = ServerServiceDefinition.builder(descriptor.build());
    methods.forEach(definition::addMethod);
    return definition.build();
  }

  private static <Req, Resp> ServerMethodDefinition<Inbound<Req>, Resp> limited(
      ServerMethodDefinition<Req, Resp> method, long limit, ActorSystem system, RouterMetrics metrics) {
    MethodDescriptor<Req, Resp> generated = method.getMethodDescriptor();
    MethodDescriptor<Inbound<Req>, Resp> descriptor = generated.toBuilder(
        new LimitedMarshaller<>(generated.getRequestMarshaller(), limit), generated.getResponseMarshaller()).build();
    ServerCallHandler<Req, Resp> handler = method.getServerCallHandler();
    return ServerMethodDefinition.create(descriptor,
        (call, headers) -> new Unwrapping<>(call, handler.startCall(new Unwrapped<>(call, generated), headers),
            system, metrics));
  }

  /** A request message, or (message null) why it was not accepted. */
  record Inbound<T>(T message, RoutingError rejection) {}

  /**
   * Parses requests up to the limit. Compressed messages arrive without a known length: at most limit + 1 bytes of
   * them are read.
   */
  private static final class LimitedMarshaller<T> implements MethodDescriptor.Marshaller<Inbound<T>> {
    private final MethodDescriptor.Marshaller<T> delegate;
    private final long limit;

    LimitedMarshaller(MethodDescriptor.Marshaller<T> delegate, long limit) {
      this.delegate = delegate;
      this.limit = limit;
    }

    @Override
    public InputStream stream(Inbound<T> value) {
      return delegate.stream(value.message());
    }

    @Override
    public Inbound<T> parse(InputStream stream) {
      try {
        InputStream body = stream;
        if (stream instanceof KnownLength) {
          if (stream.available() > limit) {
            return new Inbound<>(null, StatusMapping.messageTooLarge(limit));
          }
        } else {
          byte[] bytes = stream.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, limit + 1));
          if (bytes.length > limit) {
            return new Inbound<>(null, StatusMapping.messageTooLarge(limit));
          }
          body = new ByteArrayInputStream(bytes);
        }
        return new Inbound<>(delegate.parse(body), null);
      } catch (StatusRuntimeException e) {
        // grpc-java's protobuf marshaller reports an unparsable message this way
        return new Inbound<>(null, StatusMapping.malformedBody(String.valueOf(e.getStatus().getDescription())));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** The call's listener: hands accepted messages to the generated handler's listener, closes rejected calls. */
  private static final class Unwrapping<Req, Resp> extends ServerCall.Listener<Inbound<Req>> {
    private final ServerCall<Inbound<Req>, Resp> call;
    private final ServerCall.Listener<Req> delegate;
    private final ActorSystem system;
    private final RouterMetrics metrics;
    private boolean rejected;

    Unwrapping(ServerCall<Inbound<Req>, Resp> call, ServerCall.Listener<Req> delegate, ActorSystem system,
        RouterMetrics metrics) {
      this.call = call;
      this.delegate = delegate;
      this.system = system;
      this.metrics = metrics;
    }

    @Override
    public void onMessage(Inbound<Req> message) {
      if (rejected) {
        return;
      }
      if (message.rejection() != null) {
        rejected = true;
        metrics.rejected(call.getMethodDescriptor().getBareMethodName(), message.rejection().toException());
        StatusRuntimeException status = StatusMapping.toStatusException(message.rejection().toException(), system);
        call.close(status.getStatus(), status.getTrailers() == null ? new Metadata() : status.getTrailers());
        return;
      }
      delegate.onMessage(message.message());
    }

    @Override
    public void onHalfClose() {
      if (!rejected) {
        delegate.onHalfClose();
      }
    }

    @Override
    public void onCancel() {
      delegate.onCancel();
    }

    @Override
    public void onComplete() {
      delegate.onComplete();
    }

    @Override
    public void onReady() {
      delegate.onReady();
    }
  }

  /** The call as the generated handler sees it: typed on the message, everything forwarded. */
  private static final class Unwrapped<Req, Resp> extends ServerCall<Req, Resp> {
    private final ServerCall<Inbound<Req>, Resp> call;
    private final MethodDescriptor<Req, Resp> method;

    Unwrapped(ServerCall<Inbound<Req>, Resp> call, MethodDescriptor<Req, Resp> method) {
      this.call = call;
      this.method = method;
    }

    @Override
    public void request(int numMessages) {
      call.request(numMessages);
    }

    @Override
    public void sendHeaders(Metadata headers) {
      call.sendHeaders(headers);
    }

    @Override
    public void sendMessage(Resp message) {
      call.sendMessage(message);
    }

    @Override
    public boolean isReady() {
      return call.isReady();
    }

    @Override
    public void close(Status status, Metadata trailers) {
      call.close(status, trailers);
    }

    @Override
    public boolean isCancelled() {
      return call.isCancelled();
    }

    @Override
    public void setMessageCompression(boolean enabled) {
      call.setMessageCompression(enabled);
    }

    @Override
    public void setCompression(String compressor) {
      call.setCompression(compressor);
    }

    @Override
    public Attributes getAttributes() {
      return call.getAttributes();
    }

    @Override
    public String getAuthority() {
      return call.getAuthority();
    }

    @Override
    public MethodDescriptor<Req, Resp> getMethodDescriptor() {
      return method;
    }
  }
}
