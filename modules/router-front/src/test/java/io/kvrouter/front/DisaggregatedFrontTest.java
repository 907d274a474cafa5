package io.kvrouter.front;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.front.testkit.FrontNode;
import io.kvrouter.front.testkit.ScriptedEngine;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Prefill/decode pairs through the front, against scripted engines that answer vLLM's two-step protocol: the prefill
 * request (one token, not streamed, {@code kv_transfer_params.do_remote_decode}) to the prefill worker, then the
 * decode request with the prefill's {@code kv_transfer_params} to the decode worker, under one X-Request-Id; the
 * response names both workers; a failing prefill worker is retried on another; a failing decode worker releases the
 * pair; no booking is left after any of them.
 */
class DisaggregatedFrontTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static FrontNode node;
  private static final List<ScriptedEngine> engines = new ArrayList<>();

  @BeforeAll
  static void start() {
    node = FrontNode.start("");
  }

  @AfterAll
  static void stop() {
    engines.forEach(ScriptedEngine::close);
    node.close();
  }

  private static ScriptedEngine engine() {
    ScriptedEngine engine = ScriptedEngine.start(node.kit.system()).stream(3, Duration.ZERO, Duration.ofMillis(1));
    engines.add(engine);
    return engine;
  }

  private static void register(String model, String worker, WorkerRole role, ScriptedEngine engine) {
    node.register(model, new WorkerConfig(worker, 0, 1, 8192, 1000, 16, engine.url(), "", role));
  }

  private static HttpResponse<String> send(String model, String body, String... headers) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(node.url() + "/v1/completions"))
        .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return ForwardingTest.HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String streamed(String model) {
    return "{\"model\":\"" + model + "\",\"prompt\":\"Hello, world: a prompt long enough for a block or two of "
        + "approximate hashes.\",\"max_tokens\":5,\"min_tokens\":5,\"stream\":true,"
        + "\"stream_options\":{\"include_usage\":true}}";
  }

  private static void noBookingLeft(String model) {
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(node.liveBookings(model)).isZero());
  }

  @Test
  void aPairServesThePrefillThenTheDecodeUnderOneRequestId() throws Exception {
    String model = "org/pd-two-step";
    ScriptedEngine prefill = engine();
    ScriptedEngine decode = engine();
    register(model, "p1", WorkerRole.PREFILL, prefill);
    register(model, "d1", WorkerRole.DECODE, decode);

    HttpResponse<String> response = send(model, streamed(model), "x-request-id", "client-7");

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(response.body()).contains("data: [DONE]");
    assertThat(response.headers().firstValue("x-kvrouter-worker")).hasValue("d1");
    assertThat(response.headers().firstValue("x-kvrouter-prefill-worker")).hasValue("p1");
    assertThat(prefill.seenList()).hasSize(1);
    assertThat(decode.seenList()).hasSize(1);
    ScriptedEngine.Seen p = prefill.seenList().get(0);
    ScriptedEngine.Seen d = decode.seenList().get(0);
    assertThat(p.requestId()).isNotBlank().isEqualTo(d.requestId())
        .isEqualTo(response.headers().firstValue("x-kvrouter-booking-id").orElseThrow());

    JsonNode prefillBody = JSON.readTree(p.body());
    assertThat(prefillBody.path("stream").asBoolean(true)).isFalse();
    assertThat(prefillBody.path("max_tokens").asInt()).isEqualTo(1);
    assertThat(prefillBody.has("stream_options")).isFalse();
    assertThat(prefillBody.has("min_tokens")).isFalse();
    JsonNode asked = prefillBody.path("kv_transfer_params");
    assertThat(asked.path("do_remote_decode").asBoolean()).isTrue();
    assertThat(asked.path("do_remote_prefill").asBoolean(true)).isFalse();
    for (String field : List.of("remote_engine_id", "remote_block_ids", "remote_host", "remote_port")) {
      assertThat(asked.has(field) && asked.get(field).isNull()).as(field).isTrue();
    }

    JsonNode decodeBody = JSON.readTree(d.body());
    assertThat(decodeBody.path("stream").asBoolean()).isTrue();
    assertThat(decodeBody.path("max_tokens").asInt()).isEqualTo(5);
    assertThat(decodeBody.path("min_tokens").asInt()).isEqualTo(5);
    assertThat(decodeBody.path("stream_options").path("include_usage").asBoolean()).isTrue();
    JsonNode transfer = decodeBody.path("kv_transfer_params");
    assertThat(transfer.path("do_remote_prefill").asBoolean()).isTrue();
    assertThat(transfer.path("remote_engine_id").asText()).isEqualTo(prefill.url());
    assertThat(transfer.path("remote_request_id").asText()).isEqualTo(p.requestId());
    assertThat(transfer.path("remote_block_ids").size()).isEqualTo(2);
    noBookingLeft(model);
    assertThat(node.registry.find("kvrouter.front.disaggregated").tag("prefill_worker", "p1")
        .tag("decode_worker", "d1").counter().count()).isEqualTo(1.0);
  }

  @Test
  void aPairMarksItsPrefillDoneWhileTheDecodeStreams() throws Exception {
    String model = "org/pd-prefill-done";
    ScriptedEngine prefill = engine();
    ScriptedEngine decode = engine().stream(40, Duration.ZERO, Duration.ofMillis(50));
    register(model, "p1", WorkerRole.PREFILL, prefill);
    register(model, "d1", WorkerRole.DECODE, decode);

    var answer = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
      try {
        return send(model, streamed(model));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    // while the decode streams, the booking is held with its prefill marked done (the prefill rank freed)
    await().atMost(Duration.ofSeconds(10)).until(() -> !decode.seenList().isEmpty());
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(node.snapshot(model).bookings())
        .singleElement().satisfies(b -> assertThat(b.prefillDone()).isTrue()));
    assertThat(answer.get(30, java.util.concurrent.TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    noBookingLeft(model);
  }

  @Test
  void aFailingPrefillWorkerIsRetriedOnAnother() throws Exception {
    String model = "org/pd-prefill-fails";
    ScriptedEngine broken = engine().status(503);
    ScriptedEngine prefill = engine();
    ScriptedEngine decode = engine();
    register(model, "p-broken", WorkerRole.PREFILL, broken);
    register(model, "p-ok", WorkerRole.PREFILL, prefill);
    register(model, "d1", WorkerRole.DECODE, decode);
    // random picks (round_robin's one counter would give the prefill half the same parity every time)
    node.setPolicy(model, "random", java.util.Map.of("seed", "1"));

    int sent = 0;
    while (broken.seenList().isEmpty() && sent < 30) {
      HttpResponse<String> response = send(model, ForwardingTest.completion(model, false));
      sent++;
      assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
      assertThat(response.headers().firstValue("x-kvrouter-prefill-worker")).hasValue("p-ok");
      assertThat(response.body()).contains("\"text\":\"ok\"");
    }
    assertThat(broken.seenList()).as("the broken prefill worker was tried").isNotEmpty();
    assertThat(decode.seenList()).hasSize(sent);
    noBookingLeft(model);
  }

  @Test
  void aFailingDecodeReleasesThePair() throws Exception {
    String model = "org/pd-decode-fails";
    ScriptedEngine prefill = engine();
    ScriptedEngine decode = engine().status(503);
    register(model, "p1", WorkerRole.PREFILL, prefill);
    register(model, "d1", WorkerRole.DECODE, decode);

    HttpResponse<String> response = send(model, streamed(model));

    assertThat(response.statusCode()).as(response.body()).isEqualTo(502);
    assertThat(JSON.readTree(response.body()).path("error").path("message").asText()).contains("d1");
    assertThat(prefill.seenList()).hasSize(1);
    assertThat(decode.seenList()).hasSize(1);
    noBookingLeft(model);
  }

  @Test
  void aShortPromptUnderConditionalDisaggregationGoesToTheDecodeWorkerAlone() throws Exception {
    String model = "org/pd-conditional";
    ScriptedEngine prefill = engine();
    ScriptedEngine decode = engine();
    register(model, "p1", WorkerRole.PREFILL, prefill);
    register(model, "d1", WorkerRole.DECODE, decode);
    node.setPolicy(model, "kv", java.util.Map.of("conditional_disagg_isl_threshold", "100000"));

    HttpResponse<String> response = send(model, streamed(model));

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(response.headers().firstValue("x-kvrouter-worker")).hasValue("d1");
    assertThat(response.headers().firstValue("x-kvrouter-prefill-worker")).isEmpty();
    assertThat(prefill.seenList()).isEmpty();
    assertThat(decode.seenList()).singleElement().satisfies(seen ->
        assertThat(seen.body()).doesNotContain("kv_transfer_params"));
    noBookingLeft(model);
  }

  @Test
  void anAggregatedModelIsForwardedToOneEngineAsBefore() throws Exception {
    String model = "org/pd-aggregated";
    ScriptedEngine engine = engine();
    register(model, "a1", WorkerRole.AGGREGATED, engine);

    HttpResponse<String> response = send(model, streamed(model));

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("x-kvrouter-prefill-worker")).isEmpty();
    assertThat(engine.seenList()).singleElement().satisfies(seen ->
        assertThat(seen.body()).doesNotContain("kv_transfer_params"));
    noBookingLeft(model);
  }
}
