package io.kvrouter.server.transport;

import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * One unary kvrouter method as the non-stock bindings serve it: the wire name, the message prototypes (for parsing
 * and marshallers) and the call into the one service implementation.
 *
 * @param service the full service name, e.g. {@code kvrouter.v1.Router}
 * @param method the method name as in the .proto, e.g. {@code Select}
 * @param readsDeadline whether the call takes the caller's deadline (Select and the KV event batches never do)
 */
public record UnaryMethod<Req extends Message, Resp extends Message>(String service, String method,
    Req requestPrototype, Resp responsePrototype, boolean readsDeadline, Call<Req, Resp> call) {

  /** The service call; {@code remaining} is null when the caller sent no deadline (or the method reads none). */
  @FunctionalInterface
  public interface Call<Req, Resp> {
    CompletionStage<Resp> apply(Req request, Duration remaining);
  }

  /** {@code service/method}, as grpc-java names methods. */
  public String fullName() {
    return service + "/" + method;
  }

  /** The HTTP/2 {@code :path} of the method. */
  public String path() {
    return "/" + fullName();
  }

  @SuppressWarnings("unchecked")
  public Parser<Req> parser() {
    return (Parser<Req>) requestPrototype.getParserForType();
  }
}
