package io.kvrouter.epp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthCheckResponse.ServingStatus;
import io.kvrouter.api.health.v1.HealthGrpc;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.epp.testkit.EnvoyStream;
import io.kvrouter.epp.testkit.EppNode;
import io.micrometer.core.instrument.Counter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The picker against a client that plays Envoy's ext_proc message sequences (as llm-d's hermetic tests drive their
 * EPP): each request's answers in Envoy's order, the destination header and metadata, the body streamed back in
 * chunks, trailers, the response path, resets, subset hints, bad bodies, unknown models, overload, the three body
 * modes, header-only requests, objectives; after each, the model's bookings as its admission actor holds them.
 */
class EndpointPickerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MODEL = "org/epp";
  private static final String A = "127.0.0.11:8000";
  private static final String B = "127.0.0.12:8000";
  private static EppNode node;
  private static ManagedChannel channel;

  @BeforeAll
  static void start() {
    node = EppNode.start("""
        kvrouter.epp.max-body-bytes = 256k
        kvrouter.epp.book-timeout = 5s
        kvrouter.epp.objectives { critical = 100, sheddable = -100 }
        """);
    node.register(MODEL, "a", "http://" + A);
    node.register(MODEL, "b", "http://" + B + "/");
    channel = NettyChannelBuilder.forAddress("127.0.0.1", node.picker.port()).usePlaintext().build();
  }

  @AfterAll
  static void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    node.close();
  }

  @AfterEach
  void nothingLeftBooked() {
    noBookingLeft(MODEL);
  }

  private static void noBookingLeft(String model) {
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      ModelSnapshot snapshot = node.snapshot(model);
      assertThat(snapshot.bookings()).isEmpty();
      assertThat(snapshot.pending()).isZero();
    });
  }

  static byte[] chat(String model, String content, boolean stream) {
    return ("{\"model\":\"" + model + "\",\"stream\":" + stream + ",\"max_tokens\":8,"
        + "\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}]}").getBytes(StandardCharsets.UTF_8);
  }

  static Map<String, String> sets(HeaderMutation mutation) {
    Map<String, String> out = new HashMap<>();
    for (HeaderValueOption option : mutation.getSetHeadersList()) {
      out.put(option.getHeader().getKey(), option.getHeader().getRawValue().toStringUtf8());
    }
    return out;
  }

  static String metadataDestination(ProcessingResponse answer) {
    Value lb = answer.getDynamicMetadata().getFieldsOrThrow("envoy.lb");
    return lb.getStructValue().getFieldsOrThrow("x-gateway-destination-endpoint").getStringValue();
  }

  /** An immediate answer: its status, reason header and OpenAI error code. */
  static ImmediateResponse immediate(ProcessingResponse answer, int status, String reason) throws Exception {
    assertThat(answer.hasImmediateResponse()).as(answer.toString()).isTrue();
    ImmediateResponse immediate = answer.getImmediateResponse();
    assertThat(immediate.getStatus().getCodeValue()).isEqualTo(status);
    assertThat(sets(immediate.getHeaders())).containsEntry("x-kvrouter-reason", reason)
        .containsEntry("content-type", "application/json");
    JsonNode error = JSON.readTree(immediate.getBody().toByteArray()).get("error");
    assertThat(error.get("code").asText()).isEqualTo(reason);
    assertThat(error.get("message").asText()).isNotBlank();
    return immediate;
  }

  private static int liveBookings() {
    return node.liveBookings(MODEL);
  }

  private static double counter(String name, String... tags) {
    Counter counter = node.registry.find(name).tags(tags).counter();
    return counter == null ? 0 : counter.count();
  }

  @Test
  void fullDuplexWaitsForTheWholeBodyThenAnswersHeadersBodyInChunksAndReleasesAtTheResponseEnd() throws Exception {
    // a body of ~150 KB in 5 chunks: the picker streams it back in chunks of at most 62,000 bytes
    byte[] body = chat(MODEL, "x".repeat(150_000), true);
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/chat/completions", Map.of(
          "x-llm-d-inference-objective", "critical",
          "x-gateway-inference-fairness-id", "tenant-1",
          "x-gateway-destination-endpoint", "10.9.9.9:1"), false);
      envoy.requestBodyIn(body, 5);
      ProcessingResponse headers = envoy.next();
      assertThat(headers.hasRequestHeaders()).as(headers.toString()).isTrue();
      CommonResponse common = headers.getRequestHeaders().getResponse();
      String destination = sets(common.getHeaderMutation()).get("x-gateway-destination-endpoint");
      assertThat(destination).isIn(A, B);
      assertThat(metadataDestination(headers)).isEqualTo(destination);
      assertThat(sets(common.getHeaderMutation())).containsEntry("content-length", Integer.toString(body.length));
      assertThat(common.getClearRouteCache()).isTrue();
      assertThat(common.getHeaderMutation().getRemoveHeadersList()).contains("x-llm-d-inference-objective",
          "x-gateway-inference-fairness-id", "x-gateway-destination-endpoint");
      // the body goes back whole, in order, in chunks Envoy accepts, the last one ending the stream
      ByteString echoed = ByteString.EMPTY;
      int chunks = (body.length + 61_999) / 62_000;
      List<ProcessingResponse> bodies = envoy.next(chunks);
      for (int i = 0; i < chunks; i++) {
        var streamed = bodies.get(i).getRequestBody().getResponse().getBodyMutation().getStreamedResponse();
        assertThat(streamed.getBody().size()).isLessThanOrEqualTo(62_000);
        assertThat(streamed.getEndOfStream()).isEqualTo(i == chunks - 1);
        echoed = echoed.concat(streamed.getBody());
      }
      assertThat(echoed.toByteArray()).isEqualTo(body);
      ModelSnapshot booked = node.snapshot(MODEL);
      assertThat(booked.bookings()).singleElement().satisfies(b -> {
        assertThat(b.workerId()).isEqualTo(destination.equals(A) ? "a" : "b");
        assertThat(b.prefillDone()).isFalse();
      });
      // the response: headers name the worker, the first chunk marks prefill done, the end releases
      envoy.responseHeaders(200, "text/event-stream", false);
      ProcessingResponse responseHeaders = envoy.next();
      assertThat(responseHeaders.hasResponseHeaders()).isTrue();
      Map<String, String> added = sets(responseHeaders.getResponseHeaders().getResponse().getHeaderMutation());
      assertThat(added).containsEntry("x-kvrouter-worker", booked.bookings().get(0).workerId())
          .containsEntry("x-kvrouter-booking-id", booked.bookings().get(0).requestId());
      byte[] first = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n".getBytes(StandardCharsets.UTF_8);
      envoy.responseBody(first, false);
      ProcessingResponse echoedFirst = envoy.next();
      assertThat(echoedFirst.getResponseBody().getResponse().getBodyMutation().getStreamedResponse().getBody()
          .toByteArray()).isEqualTo(first);
      await().atMost(Duration.ofSeconds(5)).until(() -> node.snapshot(MODEL).bookings().get(0).prefillDone());
      byte[] last = ("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":37,\"completion_tokens\":8,"
          + "\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\ndata: [DONE]\n\n").getBytes(StandardCharsets.UTF_8);
      envoy.responseBody(last, true);
      var end = envoy.next().getResponseBody().getResponse().getBodyMutation().getStreamedResponse();
      assertThat(end.getEndOfStream()).isTrue();
      assertThat(end.getBody().toByteArray()).isEqualTo(last);
      await().atMost(Duration.ofSeconds(5)).until(() -> liveBookings() == 0);
      envoy.halfClose();
      assertThat(envoy.closed().isOk()).isTrue();
    }
    assertThat(counter("kvrouter.epp.tokens", "model", MODEL, "kind", "prompt")).isEqualTo(37);
    assertThat(counter("kvrouter.epp.tokens", "model", MODEL, "kind", "completion")).isEqualTo(8);
    assertThat(counter("kvrouter.epp.tokens", "model", MODEL, "kind", "cached")).isEqualTo(16);
  }

  @Test
  void requestTrailersEndTheBodyAndAreAnsweredAfterIt() {
    byte[] body = chat(MODEL, "with trailers", false);
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/chat/completions", Map.of(), false)
          .requestBody(body, false)
          .requestTrailers(Map.of("x-checksum", "1"));
      List<ProcessingResponse> answers = envoy.next(3);
      assertThat(answers.get(0).hasRequestHeaders()).isTrue();
      var streamed = answers.get(1).getRequestBody().getResponse().getBodyMutation().getStreamedResponse();
      assertThat(streamed.getBody().toByteArray()).isEqualTo(body);
      assertThat(streamed.getEndOfStream()).as("the trailers end the request, not the body").isFalse();
      assertThat(answers.get(2).hasRequestTrailers()).isTrue();
      assertThat(liveBookings()).isEqualTo(1);
      envoy.responseHeaders(200, "application/json", false).responseBody("{}".getBytes(), false)
          .responseTrailers();
      List<ProcessingResponse> response = envoy.next(3);
      assertThat(response.get(2).hasResponseTrailers()).isTrue();
      await().atMost(Duration.ofSeconds(5)).until(() -> liveBookings() == 0);
    }
  }

  @Test
  void aResetBeforeTheResponseAndOneInTheMiddleOfItBothRelease() {
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/completions", Map.of(), false)
          .requestBody("{\"model\":\"org/epp\",\"prompt\":\"reset me\"}".getBytes(), true);
      assertThat(envoy.next().hasRequestHeaders()).isTrue();
      envoy.next();
      assertThat(liveBookings()).isEqualTo(1);
      envoy.reset();
      await().atMost(Duration.ofSeconds(5)).until(() -> liveBookings() == 0);
    }
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/completions", Map.of(), false)
          .requestBody("{\"model\":\"org/epp\",\"prompt\":\"reset me later\",\"stream\":true}".getBytes(), true);
      envoy.next(2);
      envoy.responseHeaders(200, "text/event-stream", false).responseBody("data: {}\n\n".getBytes(), false);
      envoy.next(2);
      await().atMost(Duration.ofSeconds(5)).until(() -> node.snapshot(MODEL).bookings().get(0).prefillDone());
      envoy.reset();
      await().atMost(Duration.ofSeconds(5)).until(() -> liveBookings() == 0);
    }
  }

  @Test
  void aSubsetHintIsObeyedAsAListOrACommaStringByIpAndPortOrByIpAlone() {
    for (var hint : List.of(EnvoyStream.subsetList(B), EnvoyStream.subsetString("10.0.0.1:80, " + B),
        EnvoyStream.subsetString("127.0.0.12"), EnvoyStream.subsetList("127.0.0.11:9999", "127.0.0.12"))) {
      for (int i = 0; i < 3; i++) {
        try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel).withMetadata(hint)) {
          envoy.requestHeaders("/v1/chat/completions", Map.of(), false)
              .requestBody(chat(MODEL, "subset " + i, false), true);
          ProcessingResponse headers = envoy.next();
          assertThat(sets(headers.getRequestHeaders().getResponse().getHeaderMutation()))
              .as(hint.toString()).containsEntry("x-gateway-destination-endpoint", B);
          envoy.next();
          assertThat(node.snapshot(MODEL).bookings()).singleElement()
              .satisfies(b -> assertThat(b.workerId()).isEqualTo("b"));
          envoy.responseHeaders(200, "application/json", false).responseBody("{}".getBytes(), true);
          envoy.next(2);
          noBookingLeft(MODEL);
        }
      }
    }
  }

  @Test
  void aSubsetHintThatAdmitsNoWorkerOrIsEmptyIs503() throws Exception {
    for (var hint : List.of(EnvoyStream.subsetList("127.0.0.11:1234", "10.1.1.1"), EnvoyStream.subsetList(),
        EnvoyStream.subsetString(""))) {
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel).withMetadata(hint)) {
        envoy.requestHeaders("/v1/chat/completions", Map.of(), false).requestBody(chat(MODEL, "none", false), true);
        immediate(envoy.next(), 503, "NO_ENDPOINTS");
        assertThat(envoy.closed().isOk()).isTrue();
      }
      assertThat(liveBookings()).isZero();
    }
  }

  @Test
  void malformedWrongAndOversizedBodiesAre400And413() throws Exception {
    Map<String, String> bodies = Map.of(
        "{\"model\": \"org/epp\", \"messages\": [", "MALFORMED_JSON",
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", "MISSING_MODEL",
        "{\"model\": 7, \"messages\": []}", "INVALID_BODY",
        "{\"model\": \"org/epp\", \"model\": \"org/epp\", \"messages\": []}", "MALFORMED_JSON",
        "[1, 2, 3]", "INVALID_BODY");
    for (var entry : bodies.entrySet()) {
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
        envoy.requestHeaders("/v1/chat/completions", Map.of(), false)
            .requestBodyIn(entry.getKey().getBytes(StandardCharsets.UTF_8), 2);
        immediate(envoy.next(), 400, entry.getValue());
      }
    }
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/chat/completions", Map.of(), false);
      byte[] chunk = new byte[100_000];
      java.util.Arrays.fill(chunk, (byte) ' ');
      envoy.requestBody(chunk, false).requestBody(chunk, false).requestBody(chunk, false);
      immediate(envoy.next(), 413, "BODY_TOO_LARGE");
      assertThat(envoy.closed().isOk()).isTrue();
    }
    assertThat(liveBookings()).isZero();
  }

  @Test
  void anUnknownModelIs404AndLeavesNothingBehind() throws Exception {
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/chat/completions", Map.of(), false).requestBody(chat("org/nobody", "hi", false), true);
      immediate(envoy.next(), 404, "UNKNOWN_MODEL");
    }
    assertThat(node.routing.view("org/nobody")).isNull();
  }

  @Test
  void bufferedModeAnswersTheHeadersAtOnceAndRoutesInTheBodysAnswer() {
    try (EnvoyStream envoy = EnvoyStream.open(channel, BodySendMode.BUFFERED, BodySendMode.BUFFERED, false)) {
      envoy.requestHeaders("/v1/chat/completions", Map.of("x-gateway-inference-objective", "sheddable"), false);
      ProcessingResponse headers = envoy.next(); // before any body was sent
      assertThat(headers.hasRequestHeaders()).isTrue();
      assertThat(headers.getRequestHeaders().getResponse().getHeaderMutation().getRemoveHeadersList())
          .containsExactly("x-gateway-inference-objective");
      assertThat(liveBookings()).isZero();
      envoy.requestBody(chat(MODEL, "buffered", false), true);
      ProcessingResponse body = envoy.next();
      CommonResponse common = body.getRequestBody().getResponse();
      String destination = sets(common.getHeaderMutation()).get("x-gateway-destination-endpoint");
      assertThat(destination).isIn(A, B);
      assertThat(common.getClearRouteCache()).isTrue();
      assertThat(common.hasBodyMutation()).as("a buffered body goes on unchanged").isFalse();
      assertThat(metadataDestination(body)).isEqualTo(destination);
      assertThat(liveBookings()).isEqualTo(1);
      envoy.responseHeaders(200, "application/json", false);
      envoy.next();
      envoy.responseBody("{\"usage\":{\"prompt_tokens\":3}}".getBytes(), true);
      ProcessingResponse end = envoy.next();
      assertThat(end.getResponseBody().getResponse()).isEqualTo(CommonResponse.getDefaultInstance());
      await().atMost(Duration.ofSeconds(5)).until(() -> liveBookings() == 0);
    }
  }

  @Test
  void streamedModeWithTheBodySentEarlyAnswersEachHeldChunkAfterTheHeaders() {
    try (EnvoyStream envoy = EnvoyStream.open(channel, BodySendMode.STREAMED, BodySendMode.STREAMED, true)) {
      byte[] body = chat(MODEL, "streamed", false);
      envoy.requestHeaders("/v1/chat/completions", Map.of(), false).requestBodyIn(body, 2);
      List<ProcessingResponse> answers = envoy.next(3);
      assertThat(sets(answers.get(0).getRequestHeaders().getResponse().getHeaderMutation()))
          .containsKey("x-gateway-destination-endpoint").doesNotContainKey("content-length");
      assertThat(answers.get(1).getRequestBody().getResponse()).isEqualTo(CommonResponse.getDefaultInstance());
      assertThat(answers.get(2).getRequestBody().getResponse()).isEqualTo(CommonResponse.getDefaultInstance());
      envoy.responseHeaders(200, "application/json", false).responseBody("{".getBytes(), false)
          .responseBody("}".getBytes(), true);
      List<ProcessingResponse> response = envoy.next(3);
      assertThat(response.get(1).getResponseBody().getResponse()).isEqualTo(CommonResponse.getDefaultInstance());
      await().atMost(Duration.ofSeconds(5)).until(() -> liveBookings() == 0);
    }
  }

  @Test
  void plainStreamedModeCannotRouteByTheBodyAndSaysSo() throws Exception {
    try (EnvoyStream envoy = EnvoyStream.open(channel, BodySendMode.STREAMED, BodySendMode.STREAMED, false)) {
      envoy.requestHeaders("/v1/chat/completions", Map.of(), false);
      immediate(envoy.next(), 500, "UNSUPPORTED_PROCESSING_MODE");
    }
  }

  @Test
  void withoutProtocolConfigTheStreamIsFullDuplex() {
    try (EnvoyStream envoy = EnvoyStream.open(channel, null, null, false)) {
      envoy.requestHeaders("/v1/completions", Map.of(), false)
          .requestBody("{\"model\":\"org/epp\",\"prompt\":\"old envoy\"}".getBytes(), true);
      assertThat(envoy.next().hasRequestHeaders()).isTrue();
      assertThat(envoy.next().getRequestBody().getResponse().getBodyMutation().hasStreamedResponse()).isTrue();
      envoy.halfClose();
      await().atMost(Duration.ofSeconds(5)).until(() -> liveBookings() == 0);
    }
  }

  @Test
  void aHeaderOnlyRequestGoesToAWorkerWithoutABooking() {
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel).withMetadata(EnvoyStream.subsetList(A))) {
      envoy.requestHeaders("/v1/models", Map.of("x-kvrouter-priority", "3"), true);
      ProcessingResponse headers = envoy.next();
      Map<String, String> set = sets(headers.getRequestHeaders().getResponse().getHeaderMutation());
      assertThat(set).containsEntry("x-gateway-destination-endpoint", A);
      assertThat(headers.getRequestHeaders().getResponse().getHeaderMutation().getRemoveHeadersList())
          .containsExactly("x-kvrouter-priority");
      assertThat(metadataDestination(headers)).isEqualTo(A);
      assertThat(liveBookings()).isZero();
      envoy.responseHeaders(200, "application/json", false).responseBody("{\"data\":[]}".getBytes(), true);
      assertThat(sets(envoy.next().getResponseHeaders().getResponse().getHeaderMutation()))
          .doesNotContainKey("x-kvrouter-worker");
      envoy.next();
    }
  }

  @Test
  void aServedEndpointOtherThanTheBookedOneReleasesTheBooking() {
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel).withMetadata(EnvoyStream.subsetList(A))) {
      envoy.requestHeaders("/v1/completions", Map.of(), false)
          .requestBody("{\"model\":\"org/epp\",\"prompt\":\"served elsewhere\"}".getBytes(), true);
      envoy.next(2);
      assertThat(liveBookings()).isEqualTo(1);
      // the data plane retried on B and says so in the response phase's metadata
      envoy.withMetadata(EnvoyStream.namespace("envoy.lb", "x-gateway-destination-endpoint-served",
          Value.newBuilder().setStringValue(B).build()));
      envoy.responseHeaders(200, "application/json", false);
      assertThat(envoy.next().hasResponseHeaders()).isTrue();
      await().atMost(Duration.ofSeconds(5)).until(() -> liveBookings() == 0);
      envoy.responseBody("{}".getBytes(), true);
      envoy.next();
    }
    assertThat(counter("kvrouter.epp.served.elsewhere", "model", MODEL)).isEqualTo(1);
  }

  @Test
  void fallbacksListTheNextBestEndpointsAfterTheBookedOne() {
    try (EppNode fallbacks = EppNode.start("kvrouter.epp.fallbacks = 2")) {
      ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", fallbacks.picker.port()).usePlaintext()
          .build();
      String model = "org/fallbacks";
      fallbacks.register(model, "a", "http://" + A);
      fallbacks.register(model, "b", "http://" + B);
      fallbacks.register(model, "c", "http://127.0.0.13:8000");
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(ch)) {
        envoy.requestHeaders("/v1/chat/completions", Map.of(), false).requestBody(chat(model, "list", false), true);
        ProcessingResponse headers = envoy.next();
        String destination = sets(headers.getRequestHeaders().getResponse().getHeaderMutation())
            .get("x-gateway-destination-endpoint");
        assertThat(destination.split(",")).hasSize(3).doesNotHaveDuplicates()
            .containsExactlyInAnyOrder(A, B, "127.0.0.13:8000");
        assertThat(metadataDestination(headers)).isEqualTo(destination);
        ModelSnapshot snapshot = fallbacks.snapshot(model);
        assertThat(snapshot.bookings()).singleElement().satisfies(b -> assertThat(
            Map.of("a", A, "b", B, "c", "127.0.0.13:8000").get(b.workerId())).isEqualTo(destination.split(",")[0]));
        envoy.next();
        envoy.reset();
        await().atMost(Duration.ofSeconds(5)).until(() -> fallbacks.liveBookings(model) == 0);
      } finally {
        ch.shutdownNow();
      }
    }
  }

  @Test
  void everyWorkerOverloadedAndAFullQueueAre429() throws Exception {
    String model = "org/epp-overload";
    node.register(model, "q", "http://127.0.0.21:8000");
    // one booking holds the only worker's prefill: every worker is overloaded
    node.setPolicy(model, "least_in_flight", Map.of("active_prefill_tokens_threshold", "0"));
    try (EnvoyStream holder = EnvoyStream.fullDuplex(channel)) {
      holder.requestHeaders("/v1/completions", Map.of(), false)
          .requestBody(("{\"model\":\"" + model + "\",\"prompt\":\"hold\"}").getBytes(), true);
      holder.next(2);
      try (EnvoyStream overloaded = EnvoyStream.fullDuplex(channel)) {
        overloaded.requestHeaders("/v1/completions", Map.of(), false)
            .requestBody(("{\"model\":\"" + model + "\",\"prompt\":\"more\"}").getBytes(), true);
        ImmediateResponse refused = immediate(overloaded.next(), 429, "ALL_WORKERS_OVERLOADED");
        assertThat(sets(refused.getHeaders())).containsEntry("retry-after", "1");
      }
      // with a queue that holds nothing: the queue limit
      node.setPolicy(model, "least_in_flight", Map.of("active_prefill_tokens_threshold", "",
          "queue_threshold_frac", "0", "max_pending", "0"));
      try (EnvoyStream full = EnvoyStream.fullDuplex(channel)) {
        full.requestHeaders("/v1/completions", Map.of(), false)
            .requestBody(("{\"model\":\"" + model + "\",\"prompt\":\"full\"}").getBytes(), true);
        immediate(full.next(), 429, "QUEUE_LIMIT");
      }
      holder.reset();
    }
    noBookingLeft(model);
  }

  @Test
  void theFairnessIdIsTheBooksQueueClassUnlessTheRequestNamesOne() {
    Map<Map<String, String>, String> expected = new java.util.LinkedHashMap<>();
    expected.put(Map.of("x-llm-d-inference-fairness-id", "tenant-a"), "tenant-a");
    expected.put(Map.of("x-gateway-inference-fairness-id", "tenant-b"), "tenant-b");
    expected.put(Map.of("x-llm-d-inference-fairness-id", "tenant-a", "x-kvrouter-policy-class", "premium"), "premium");
    expected.put(Map.of(), "");
    for (var entry : expected.entrySet()) {
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
        envoy.requestHeaders("/v1/completions", entry.getKey(), false)
            .requestBody("{\"model\":\"org/epp\",\"prompt\":\"fairness\"}".getBytes(), true);
        ProcessingResponse headers = envoy.next();
        assertThat(headers.getRequestHeaders().getResponse().getHeaderMutation().getRemoveHeadersList())
            .containsAll(entry.getKey().keySet());
        envoy.next();
        String booking = node.snapshot(MODEL).bookings().get(0).requestId();
        assertThat(EppNode.BOOKS.get(booking).policyClass()).as(entry.getKey().toString()).isEqualTo(entry.getValue());
        envoy.reset();
        noBookingLeft(MODEL);
      }
    }
  }

  @Test
  void sessionHeadersKeepAConversationOnItsEndpointAndCarryTheirMode() {
    String model = "org/epp-sessions";
    node.register(model, "a", "http://" + A);
    node.register(model, "b", "http://" + B + "/");
    node.setPolicy(model, "round_robin", Map.of()); // only the binding keeps a session in place
    for (String header : List.of("x-session-id", "X-Dynamo-Session-ID", "x-kvrouter-session")) {
      java.util.Set<String> destinations = new java.util.HashSet<>();
      for (int turn = 0; turn < 4; turn++) {
        try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
          // the objective header makes the picker rebuild the request: the session and its mode must survive that
          envoy.requestHeaders("/v1/completions", Map.of(header, "conv-" + header, "x-kvrouter-session-mode", "hard",
                  "x-llm-d-inference-objective", "critical"), false)
              .requestBody(("{\"model\":\"" + model + "\",\"prompt\":\"turn " + turn + "\"}").getBytes(), true);
          ProcessingResponse headers = envoy.next();
          destinations.add(metadataDestination(headers));
          envoy.next();
          String booking = node.snapshot(model).bookings().get(0).requestId();
          assertThat(EppNode.BOOKS.get(booking).session().sessionId()).isEqualTo("conv-" + header);
          assertThat(EppNode.BOOKS.get(booking).session().mode()).isEqualTo(io.kvrouter.core.model.SessionMode.HARD);
          envoy.reset();
          noBookingLeft(model);
        }
      }
      assertThat(destinations).as(header).hasSize(1);
    }
  }

  @Test
  void theObjectiveHeaderNamesTheBooksPriorityAndUnknownObjectivesAreZero() {
    Map<String, Integer> expected = new java.util.LinkedHashMap<>();
    expected.put("x-llm-d-inference-objective=critical", 100);
    expected.put("x-gateway-inference-objective=sheddable", -100);
    expected.put("x-llm-d-inference-objective=no-such-objective", 0);
    expected.put("", 0);
    for (var entry : expected.entrySet()) {
      String[] header = entry.getKey().split("=");
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
        envoy.requestHeaders("/v1/completions", header.length == 2 ? Map.of(header[0], header[1]) : Map.of(), false)
            .requestBody(("{\"model\":\"org/epp\",\"prompt\":\"objective " + entry.getKey() + "\"}").getBytes(), true);
        envoy.next(2);
        String booking = node.snapshot(MODEL).bookings().get(0).requestId();
        assertThat(EppNode.BOOKS.get(booking)).as(entry.getKey()).isNotNull();
        assertThat(EppNode.BOOKS.get(booking).priority()).as(entry.getKey()).isEqualTo(entry.getValue());
        envoy.reset();
        noBookingLeft(MODEL);
      }
    }
  }

  @Test
  void requiredTaintsSurviveTheObjectiveAndPickACarrierOrAreTheFrontsRefusal() throws Exception {
    String model = "org/epp-taints";
    String carrier = "127.0.0.42:8000";
    node.register(model, new WorkerConfig("plain", 0, 1, 8192, 1000, 16, "http://127.0.0.41:8000",
        node.routing.region(), WorkerRole.AGGREGATED));
    node.register(model, new WorkerConfig("h100", 0, 1, 8192, 1000, 16, "http://" + carrier, node.routing.region(),
        WorkerRole.AGGREGATED).withTaints(Set.of("gpu=h100")));
    // the objective and fairness headers make the picker rebuild the request: the placement headers must survive it
    Map<String, String> asked = Map.of("x-kvrouter-required-taints", "gpu=h100",
        "x-kvrouter-preferred-taints", "zone=eu-1", "x-kvrouter-preferred-taint-multiplier", "0.25",
        "x-llm-d-inference-objective", "critical", "x-llm-d-inference-fairness-id", "tenant-t");
    for (int i = 0; i < 3; i++) {
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
        envoy.requestHeaders("/v1/completions", asked, false)
            .requestBody(("{\"model\":\"" + model + "\",\"prompt\":\"tainted " + i + "\"}").getBytes(), true);
        ProcessingResponse headers = envoy.next();
        assertThat(metadataDestination(headers)).isEqualTo(carrier);
        envoy.next();
        String booking = node.snapshot(model).bookings().get(0).requestId();
        SelectionRequest book = EppNode.BOOKS.get(booking);
        assertThat(book.placement().requiredTaints()).containsExactly("gpu=h100");
        assertThat(book.placement().preferredTaints()).containsExactly("zone=eu-1");
        assertThat(book.placement().preferredTaintMultiplier()).isEqualTo(0.25);
        assertThat(book.priority()).isEqualTo(100);
        assertThat(book.policyClass()).isEqualTo("tenant-t");
        envoy.reset();
        noBookingLeft(model);
      }
    }
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/completions", Map.of("x-kvrouter-required-taints", "gpu=b200",
              "x-llm-d-inference-objective", "critical"), false)
          .requestBody(("{\"model\":\"" + model + "\",\"prompt\":\"no carrier\"}").getBytes(), true);
      // as the front answers it
      immediate(envoy.next(), 400, "REQUIRED_TAINTS_UNMET");
    }
    noBookingLeft(model);
  }

  @Test
  void anAdapterNamedInTheBodyBooksItsBaseModelOnTheWorkerThatHasItAndAnUnknownNameIs404() throws Exception {
    String model = "org/epp-lora";
    String loaded = "127.0.0.52:8000";
    node.register(model, new WorkerConfig("base-only", 0, 1, 8192, 1000, 16, "http://127.0.0.51:8000",
        node.routing.region(), WorkerRole.AGGREGATED));
    node.register(model, new WorkerConfig("sql", 0, 1, 8192, 1000, 16, "http://" + loaded, node.routing.region(),
        WorkerRole.AGGREGATED).withLoraAdapters(Set.of("sql-lora")));
    for (int i = 0; i < 3; i++) {
      byte[] body = chat("sql-lora", "adapter " + i, false);
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
        envoy.requestHeaders("/v1/chat/completions", Map.of(), false).requestBody(body, true);
        ProcessingResponse headers = envoy.next();
        assertThat(metadataDestination(headers)).isEqualTo(loaded);
        // the engine serves the adapter by its name: the body goes on as the client sent it
        assertThat(envoy.next().getRequestBody().getResponse().getBodyMutation().getStreamedResponse().getBody()
            .toByteArray()).isEqualTo(body);
        ModelSnapshot booked = node.snapshot(model);
        assertThat(booked.bookings()).singleElement().satisfies(b -> assertThat(b.workerId()).isEqualTo("sql"));
        SelectionRequest book = EppNode.BOOKS.get(booked.bookings().get(0).requestId());
        assertThat(book.model()).isEqualTo(model);
        assertThat(book.loraName()).isEqualTo("sql-lora");
        envoy.reset();
        noBookingLeft(model);
      }
    }
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/chat/completions", Map.of(), false).requestBody(chat("other-lora", "hi", false), true);
      immediate(envoy.next(), 404, "UNKNOWN_MODEL");
    }
    assertThat(node.routing.view("other-lora")).isNull();
    noBookingLeft(model);
  }

  private static int live(String model, String worker) {
    return node.snapshot(model).workers().stream().filter(w -> w.config().workerId().equals(worker))
        .flatMap(w -> w.ranks().stream()).mapToInt(ModelSnapshot.RankSnapshot::liveBookings).sum();
  }

  @Test
  void aPairGoesToItsDecodePodNamingThePrefillPodAndBothHalvesAreReleased() {
    String model = "org/epp-pd";
    String prefillAt = "127.0.0.31:8000";
    String decodeAt = "127.0.0.32:8000";
    node.register(model, new WorkerConfig("p", 0, 1, 8192, 1000, 16, "http://" + prefillAt, node.routing.region(),
        WorkerRole.PREFILL));
    node.register(model, new WorkerConfig("d", 0, 1, 8192, 1000, 16, "http://" + decodeAt, node.routing.region(),
        WorkerRole.DECODE));
    for (boolean reset : new boolean[] {false, true}) {
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
        // a client's own prefill header is replaced by the booked one
        envoy.requestHeaders("/v1/completions", Map.of("x-prefiller-host-port", "10.9.9.9:1"), false)
            .requestBody(("{\"model\":\"" + model + "\",\"prompt\":\"a pair, reset " + reset
                + "\",\"stream\":true}").getBytes(), true);
        ProcessingResponse headers = envoy.next();
        HeaderMutation mutation = headers.getRequestHeaders().getResponse().getHeaderMutation();
        assertThat(sets(mutation)).containsEntry("x-gateway-destination-endpoint", decodeAt)
            .containsEntry("x-prefiller-host-port", prefillAt);
        assertThat(metadataDestination(headers)).isEqualTo(decodeAt);
        envoy.next();
        assertThat(node.snapshot(model).bookings()).singleElement().satisfies(b -> {
          assertThat(b.workerId()).isEqualTo("p");
          assertThat(b.decodeRank().workerId()).isEqualTo("d");
          assertThat(b.prefillDone()).isFalse();
        });
        assertThat(live(model, "p")).isEqualTo(1);
        assertThat(live(model, "d")).isEqualTo(1);
        envoy.responseHeaders(200, "text/event-stream", false);
        Map<String, String> added = sets(envoy.next().getResponseHeaders().getResponse().getHeaderMutation());
        assertThat(added).containsEntry("x-kvrouter-worker", "d").containsEntry("x-kvrouter-prefill-worker", "p")
            .containsEntry("x-kvrouter-prefill-dp-rank", "0");
        // the decode pod answers after its sidecar had the prefill done: the prefill half is released
        await().atMost(Duration.ofSeconds(5)).until(() -> live(model, "p") == 0);
        assertThat(live(model, "d")).isEqualTo(1);
        envoy.responseBody("data: {\"choices\":[]}\n\n".getBytes(), false);
        envoy.next();
        if (reset) {
          envoy.reset();
        } else {
          envoy.responseBody("data: [DONE]\n\n".getBytes(), true);
          assertThat(envoy.next().getResponseBody().getResponse().getBodyMutation().getStreamedResponse()
              .getEndOfStream()).isTrue();
        }
        noBookingLeft(model);
        assertThat(live(model, "d")).isZero();
      }
    }
  }

  @Test
  void anAggregatedPickCarriesNoPrefillHeader() {
    try (EnvoyStream envoy = EnvoyStream.fullDuplex(channel)) {
      envoy.requestHeaders("/v1/completions", Map.of("x-prefiller-host-port", "10.9.9.9:1"), false)
          .requestBody("{\"model\":\"org/epp\",\"prompt\":\"one rank\"}".getBytes(), true);
      HeaderMutation mutation = envoy.next().getRequestHeaders().getResponse().getHeaderMutation();
      assertThat(mutation.getRemoveHeadersList()).contains("x-prefiller-host-port");
      assertThat(sets(mutation)).containsKey("x-gateway-destination-endpoint")
          .doesNotContainKey("x-prefiller-host-port");
      envoy.next();
      envoy.reset();
    }
  }

  @Test
  void theHealthPortsServeLivenessReadinessAndTheInferenceExtension() {
    for (int port : new int[] {node.picker.healthPort(), node.picker.port()}) {
      ManagedChannel health = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
      try {
        var stub = HealthGrpc.newBlockingStub(health).withDeadlineAfter(5, TimeUnit.SECONDS);
        for (String service : List.of("", "liveness", "readiness", "inference-extension",
            "envoy.service.ext_proc.v3.ExternalProcessor")) {
          assertThat(stub.check(HealthCheckRequest.newBuilder().setService(service).build()).getStatus())
              .as(service).isEqualTo(ServingStatus.SERVING);
        }
        assertThat(Status.fromThrowable(org.assertj.core.api.Assertions.catchThrowable(() -> stub.check(
            HealthCheckRequest.newBuilder().setService("kvrouter.v1.Router").build()))).getCode())
            .isEqualTo(Status.Code.NOT_FOUND);
      } finally {
        health.shutdownNow();
      }
    }
  }
}
