package io.kvrouter.interop;

import com.google.protobuf.Message;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** A gRPC client that is not ours, making one unary call at a time against a router node. */
interface InteropClient extends AutoCloseable {

  /** Which client this is, for test names and the models each client owns. */
  String name();

  Reply call(Call call);

  /** The calls made at once, on the client's one connection; their replies in the same order. */
  List<Reply> callTogether(List<Call> calls);

  @Override
  void close();

  /**
   * One unary call: {@code service} and {@code method} as named in proto/kvrouter/v1 (e.g. Router, Select),
   * {@code responsePrototype} the default instance of the answer's type.
   */
  record Call(String service, String method, Message request, Message responsePrototype,
      Map<String, String> metadata, Duration timeout) {}

  /**
   * The outcome of a call as the client saw it: the status code and its (decoded) description, the
   * {@code kvrouter-reason} trailer, every response header and trailer (binary ones base64), and the answer on
   * success.
   */
  record Reply(Status.Code code, String details, String reason, Map<String, String> headers,
      Map<String, String> trailers, Message response) {

    @SuppressWarnings("unchecked")
    <T extends Message> T response(Class<T> type) {
      if (code != Status.Code.OK) {
        throw new AssertionError("expected OK, got " + this);
      }
      return type.cast(response);
    }
  }
}
