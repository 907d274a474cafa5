package io.kvrouter.epp.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One ext_proc stream played as Envoy's ext_proc filter plays it (the pattern of llm-d's hermetic tests): the
 * messages of one HTTP request and its response, in Envoy's order, with Envoy's encodings (header values as
 * {@code raw_value}, {@code :path} and {@code :status} pseudo-headers, {@code protocol_config} on the first message,
 * the metadata namespaces the ext_proc filter forwards). Answers are collected in order.
 */
public final class EnvoyStream implements AutoCloseable {
  public static final long ANSWER_TIMEOUT_S = 10;

  private final LinkedBlockingQueue<ProcessingResponse> answers = new LinkedBlockingQueue<>();
  private final CompletableFuture<Status> closed = new CompletableFuture<>();
  private final ClientCallStreamObserver<ProcessingRequest> requests;
  private ProtocolConfiguration config;
  private Metadata metadata;

  private EnvoyStream(Channel channel, ProtocolConfiguration config) {
    this.config = config;
    CompletableFuture<ClientCallStreamObserver<ProcessingRequest>> call = new CompletableFuture<>();
    ExternalProcessorGrpc.newStub(channel).process(new ClientResponseObserver<ProcessingRequest, ProcessingResponse>() {
      @Override
      public void beforeStart(ClientCallStreamObserver<ProcessingRequest> stream) {
        call.complete(stream);
      }

      @Override
      public void onNext(ProcessingResponse value) {
        answers.add(value);
      }

      @Override
      public void onError(Throwable t) {
        closed.complete(Status.fromThrowable(t));
      }

      @Override
      public void onCompleted() {
        closed.complete(Status.OK);
      }
    });
    this.requests = call.join();
  }

  /** A stream whose first message says the body modes ({@code null}: no protocol_config, as older Envoys send). */
  public static EnvoyStream open(Channel channel, BodySendMode requestMode, BodySendMode responseMode,
      boolean bodyWithoutWaiting) {
    return new EnvoyStream(channel, requestMode == null ? null : ProtocolConfiguration.newBuilder()
        .setRequestBodyMode(requestMode).setResponseBodyMode(responseMode)
        .setSendBodyWithoutWaitingForHeaderResponse(bodyWithoutWaiting).build());
  }

  public static EnvoyStream fullDuplex(Channel channel) {
    return open(channel, BodySendMode.FULL_DUPLEX_STREAMED, BodySendMode.FULL_DUPLEX_STREAMED, false);
  }

  /** The metadata_context of every message from now on (Envoy forwards the namespaces it was told to). */
  public EnvoyStream withMetadata(Metadata metadata) {
    this.metadata = metadata;
    return this;
  }

  /** {@code {"envoy.lb.subset_hint": {"x-gateway-destination-endpoint-subset": [entries...]}}}. */
  public static Metadata subsetList(String... entries) {
    ListValue.Builder list = ListValue.newBuilder();
    for (String entry : entries) {
      list.addValues(Value.newBuilder().setStringValue(entry));
    }
    return namespace("envoy.lb.subset_hint", "x-gateway-destination-endpoint-subset",
        Value.newBuilder().setListValue(list).build());
  }

  /** The hint as one comma-separated string (what Envoy's header-to-metadata filter writes). */
  public static Metadata subsetString(String entries) {
    return namespace("envoy.lb.subset_hint", "x-gateway-destination-endpoint-subset",
        Value.newBuilder().setStringValue(entries).build());
  }

  public static Metadata namespace(String namespace, String key, Value value) {
    return Metadata.newBuilder().putFilterMetadata(namespace, Struct.newBuilder().putFields(key, value).build())
        .build();
  }

  private ProcessingRequest.Builder message() {
    ProcessingRequest.Builder b = ProcessingRequest.newBuilder();
    if (config != null) {
      b.setProtocolConfig(config);
      config = null; // only the first message carries it
    }
    if (metadata != null) {
      b.setMetadataContext(metadata);
    }
    return b;
  }

  public static HeaderMap headerMap(Map<String, String> headers) {
    HeaderMap.Builder map = HeaderMap.newBuilder();
    headers.forEach((name, value) -> map.addHeaders(HeaderValue.newBuilder().setKey(name)
        .setRawValue(ByteString.copyFromUtf8(value))));
    return map.build();
  }

  /** POST {@code path} with JSON, and {@code extra} headers. */
  public EnvoyStream requestHeaders(String path, Map<String, String> extra, boolean endOfStream) {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put(":authority", "gateway.example:8081");
    headers.put(":path", path);
    headers.put(":method", endOfStream ? "GET" : "POST");
    headers.put(":scheme", "http");
    headers.put("content-type", "application/json");
    headers.put("x-request-id", java.util.UUID.randomUUID().toString());
    headers.putAll(extra);
    requests.onNext(message().setRequestHeaders(HttpHeaders.newBuilder().setHeaders(headerMap(headers))
        .setEndOfStream(endOfStream)).build());
    return this;
  }

  public EnvoyStream requestBody(byte[] chunk, boolean endOfStream) {
    requests.onNext(message().setRequestBody(HttpBody.newBuilder().setBody(ByteString.copyFrom(chunk))
        .setEndOfStream(endOfStream)).build());
    return this;
  }

  /** The body in {@code parts} chunks of about equal size, the last with end_of_stream. */
  public EnvoyStream requestBodyIn(byte[] body, int parts) {
    int size = (body.length + parts - 1) / parts;
    for (int i = 0; i < parts; i++) {
      int from = Math.min(body.length, i * size);
      int to = i == parts - 1 ? body.length : Math.min(body.length, from + size);
      requestBody(java.util.Arrays.copyOfRange(body, from, to), i == parts - 1);
    }
    return this;
  }

  public EnvoyStream requestTrailers(Map<String, String> trailers) {
    requests.onNext(message().setRequestTrailers(HttpTrailers.newBuilder().setTrailers(headerMap(trailers)))
        .build());
    return this;
  }

  public EnvoyStream responseHeaders(int status, String contentType, boolean endOfStream) {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put(":status", Integer.toString(status));
    headers.put("content-type", contentType);
    requests.onNext(message().setResponseHeaders(HttpHeaders.newBuilder().setHeaders(headerMap(headers))
        .setEndOfStream(endOfStream)).build());
    return this;
  }

  public EnvoyStream responseBody(byte[] chunk, boolean endOfStream) {
    requests.onNext(message().setResponseBody(HttpBody.newBuilder().setBody(ByteString.copyFrom(chunk))
        .setEndOfStream(endOfStream)).build());
    return this;
  }

  public EnvoyStream responseTrailers() {
    requests.onNext(message().setResponseTrailers(HttpTrailers.newBuilder()
        .setTrailers(headerMap(Map.of("grpc-status", "0")))).build());
    return this;
  }

  /** Envoy's end of the stream once the request is done. */
  public void halfClose() {
    requests.onCompleted();
  }

  /** Envoy resets the stream (the client went away, or the stream was reset downstream). */
  public void reset() {
    requests.cancel("downstream reset", null);
  }

  /** The next answer, waiting at most {@link #ANSWER_TIMEOUT_S}. */
  public ProcessingResponse next() {
    try {
      ProcessingResponse answer = answers.poll(ANSWER_TIMEOUT_S, TimeUnit.SECONDS);
      assertThat(answer).as("an answer from the picker within %d s (stream closed: %s)", ANSWER_TIMEOUT_S,
          closed.getNow(null)).isNotNull();
      return answer;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The next {@code n} answers. */
  public List<ProcessingResponse> next(int n) {
    List<ProcessingResponse> out = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(next());
    }
    return out;
  }

  /** The answers received so far and not yet taken. */
  public List<ProcessingResponse> pending() {
    List<ProcessingResponse> out = new java.util.ArrayList<>();
    answers.drainTo(out);
    return out;
  }

  /** How the picker ended the stream (waits for it). */
  public Status closed() {
    try {
      return closed.get(ANSWER_TIMEOUT_S, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("the picker did not end the stream within " + ANSWER_TIMEOUT_S + " s", e);
    }
  }

  @Override
  public void close() {
    if (!closed.isDone()) {
      requests.cancel("test done", null);
    }
  }
}
