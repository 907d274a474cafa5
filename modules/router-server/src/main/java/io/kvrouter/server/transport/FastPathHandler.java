package io.kvrouter.server.transport;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Message;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.kvrouter.server.grpc.Deadlines;
import io.kvrouter.server.grpc.GrpcErrors;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.http.javadsl.model.AttributeKeys;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaType;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.Trailer;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.japi.function.Function;
import org.apache.pekko.util.ByteString;

/**
 * The PEKKO_FAST binding's handler, in front of the stock one. It answers kvrouter's unary calls itself when the
 * request is the plain common case: HTTP/2, POST, {@code application/grpc} (or {@code +proto}), no message encoding
 * other than identity, a strict entity (pekko-http collected the one DATA frame) holding exactly one uncompressed
 * frame whose declared length matches and is within {@code kvrouter.grpc.max-message-bytes}. It parses the request,
 * calls the same service object as every other binding, and answers a strict entity: the framed response with
 * {@code grpc-status: 0} as an HTTP/2 trailer, or a trailers-only error (grpc-status, percent-encoded grpc-message
 * and the reason in the headers). Everything else (compressed or grpc-web calls, streamed bodies, over-limit or
 * malformed frames, health, reflection, unknown paths) goes to the stock handler unchanged.
 */
final class FastPathHandler implements Function<HttpRequest, CompletionStage<HttpResponse>> {
  private static final long serialVersionUID = 1L;

  static final ContentType.Binary GRPC = ContentTypes.create(MediaTypes.customBinary("application", "grpc", false));
  private static final Trailer OK = Trailer.create().addHeader(RawHeader.create("grpc-status", "0"));
  private static final int FRAME_HEADER = 5;

  private final transient Map<String, UnaryMethod<?, ?>> methods = new HashMap<>();
  private final transient Function<HttpRequest, CompletionStage<HttpResponse>> stock;
  private final long limit;
  private final transient TransportStats stats;
  private final transient ActorSystem system;

  FastPathHandler(List<UnaryMethod<?, ?>> methods, long limit, Function<HttpRequest, CompletionStage<HttpResponse>> stock,
      TransportStats stats, ActorSystem system) {
    for (UnaryMethod<?, ?> method : methods) {
      this.methods.put(method.path(), method);
    }
    this.limit = limit;
    this.stock = stock;
    this.stats = stats;
    this.system = system;
  }

  @Override
  public CompletionStage<HttpResponse> apply(HttpRequest request) throws Exception {
    UnaryMethod<?, ?> method = methods.get(request.getUri().path());
    if (method != null && request.entity() instanceof HttpEntity.Strict strict && nativeGrpc(request)) {
      String encoding = null;
      String timeout = null;
      for (HttpHeader header : request.getHeaders()) {
        if (header.is("grpc-encoding")) {
          encoding = header.value();
        } else if (header.is("grpc-timeout")) {
          timeout = header.value();
        }
      }
      ByteString body = strict.getData();
      if ((encoding == null || encoding.equals("identity")) && body.size() >= FRAME_HEADER && body.apply(0) == 0
          && declaredLength(body) == body.size() - FRAME_HEADER && body.size() - FRAME_HEADER <= limit) {
        stats.fastPath.increment();
        // Select and the other deadline-free methods never look at grpc-timeout
        return serve(method, body, method.readsDeadline() ? timeout : null);
      }
    }
    stats.stock.increment();
    return stock.apply(request);
  }

  /** An HTTP/2 POST with a native gRPC content type (not grpc-web). */
  private static boolean nativeGrpc(HttpRequest request) {
    if (!request.protocol().value().equals("HTTP/2.0") || !request.method().equals(HttpMethods.POST)) {
      return false;
    }
    MediaType type = request.entity().getContentType().mediaType();
    return type.mainType().equals("application")
        && (type.subType().equals("grpc") || type.subType().equals("grpc+proto"));
  }

  private static long declaredLength(ByteString body) {
    return ((body.apply(1) & 0xffL) << 24) | ((body.apply(2) & 0xffL) << 16) | ((body.apply(3) & 0xffL) << 8)
        | (body.apply(4) & 0xffL);
  }

  private <Req extends Message, Resp extends Message> CompletionStage<HttpResponse> serve(UnaryMethod<Req, Resp> method,
      ByteString body, String timeout) {
    CompletionStage<Resp> answer;
    try {
      ByteBuffer bytes = body.asByteBuffer();
      bytes.position(bytes.position() + FRAME_HEADER);
      Req request = method.parser().parseFrom(bytes);
      Duration remaining = timeout == null ? null : Deadlines.parse(timeout);
      answer = method.call().apply(request, remaining);
    } catch (Exception e) {
      return CompletableFuture.completedFuture(error(e));
    }
    return answer.handle((response, failure) -> failure == null ? ok(response) : error(failure));
  }

  private static HttpResponse ok(Message response) {
    int size = response.getSerializedSize();
    byte[] framed = new byte[FRAME_HEADER + size];
    framed[1] = (byte) (size >>> 24);
    framed[2] = (byte) (size >>> 16);
    framed[3] = (byte) (size >>> 8);
    framed[4] = (byte) size;
    try {
      CodedOutputStream out = CodedOutputStream.newInstance(framed, FRAME_HEADER, size);
      response.writeTo(out);
      out.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("serializing " + response.getDescriptorForType().getFullName(), e);
    }
    return HttpResponse.create()
        .withEntity(GRPC, ByteString.fromArrayUnsafe(framed))
        .addAttribute(AttributeKeys.trailer, OK);
  }

  /** A trailers-only answer: the status, its message and the reason travel in the one HEADERS frame. */
  private HttpResponse error(Throwable failure) {
    StatusRuntimeException status = GrpcErrors.toStatusException(failure, system);
    List<HttpHeader> headers = new ArrayList<>(4);
    headers.add(RawHeader.create("grpc-status", Integer.toString(status.getStatus().getCode().value())));
    String description = status.getStatus().getDescription();
    if (description != null) {
      headers.add(RawHeader.create("grpc-message", GrpcErrors.percentEncode(description)));
    }
    Metadata trailers = status.getTrailers();
    if (trailers != null) {
      for (String key : trailers.keys()) {
        if (!key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
          for (String value : trailers.getAll(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER))) {
            headers.add(RawHeader.create(key, value));
          }
        }
      }
    }
    return HttpResponse.create().withEntity(GRPC, ByteString.emptyByteString()).withHeaders(headers);
  }
}
