package io.kvrouter.front;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvrouter.front.routing.CircuitBreakers;
import io.kvrouter.front.testkit.FrontNode;
import io.kvrouter.front.testkit.ScriptedEngine;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The front forwarding to scripted engines through a real one-node cluster: the answer streamed back with the worker
 * named, failures before the first byte retried on another worker (refused, 5xx, 429, a cut, a silent engine), the
 * breaker of a failing worker opening, a failure after the first byte ending the stream with an error event, and no
 * booking left after any of them (the admission actor's own snapshot).
 */
class ForwardingTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  // HTTP/1.1: the JDK client's h2c Upgrade of a request with a body is not served by Pekko HTTP (module README)
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private static FrontNode node;
  private static int models;

  @BeforeAll
  static void start() {
    node = FrontNode.start("""
        kvrouter.front.attempts = 3
        kvrouter.front.breaker.failures = 2
        kvrouter.front.breaker.cool-down = 1h
        kvrouter.front.first-token-timeout = 1500ms
        kvrouter.front.response-timeout = 1500ms
        kvrouter.front.idle-timeout = 1500ms
        """);
  }

  @AfterAll
  static void stop() {
    node.close();
  }

  private static String model() {
    return "org/front-" + (++models);
  }

  private static ScriptedEngine engine() {
    return ScriptedEngine.start(node.kit.system());
  }

  static HttpResponse<String> post(String path, String body, String... headers) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(node.url() + path))
        .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  static String completion(String model, boolean stream) {
    return "{\"model\":\"" + model + "\",\"prompt\":\"Hello, world: a prompt long enough for a block or two of "
        + "approximate hashes.\",\"max_tokens\":5,\"stream\":" + stream + "}";
  }

  private static void noBookingLeft(String model) {
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(node.liveBookings(model)).isZero());
  }

  @Test
  void aStreamIsForwardedWithItsBookingAndReleased() throws Exception {
    String model = model();
    try (ScriptedEngine engine = engine().stream(4, Duration.ZERO, Duration.ofMillis(5))) {
      node.register(model, "w1", engine.url());
      HttpResponse<String> response = post("/v1/completions", completion(model, true), "x-request-id", "client-7",
          "authorization", "Bearer secret");
      assertThat(response.statusCode()).isEqualTo(200);
      assertThat(response.headers().firstValue("content-type")).hasValueSatisfying(v ->
          assertThat(v).startsWith("text/event-stream"));
      assertThat(response.headers().firstValue("x-kvrouter-worker")).hasValue("w1");
      assertThat(response.headers().firstValue("x-request-id")).hasValue("client-7");
      assertThat(response.headers().firstValue("x-kvrouter-attempts")).hasValue("1");
      String booking = response.headers().firstValue("x-kvrouter-booking-id").orElseThrow();
      assertThat(booking).startsWith("front-client-7-").endsWith("/1");
      assertThat(response.body()).contains(" t0", " t3").endsWith("data: [DONE]\n\n");
      ScriptedEngine.Seen seen = engine.seenList().get(0);
      assertThat(seen.requestId()).isEqualTo(booking);
      assertThat(seen.dpRank()).isEqualTo("0");
      assertThat(seen.authorization()).isEqualTo("Bearer secret");
      assertThat(seen.body()).isEqualTo(completion(model, true));
      noBookingLeft(model);
    }
  }

  @Test
  void twoClientsReusingOneRequestIdNeverShareABooking() throws Exception {
    String model = model();
    try (ScriptedEngine engine = engine().stream(3, Duration.ZERO, Duration.ofMillis(5))) {
      node.register(model, "w1", engine.url());
      HttpResponse<String> a = post("/v1/completions", completion(model, false), "x-request-id", "same");
      HttpResponse<String> b = post("/v1/completions", completion(model, false), "x-request-id", "same");
      assertThat(a.statusCode()).isEqualTo(200);
      assertThat(b.statusCode()).isEqualTo(200);
      assertThat(a.headers().firstValue("x-kvrouter-booking-id"))
          .isNotEqualTo(b.headers().firstValue("x-kvrouter-booking-id"));
      noBookingLeft(model);
    }
  }

  @Test
  void aRefusingWorkerIsRetriedElsewhereAndItsBreakerOpens() throws Exception {
    String model = model();
    try (ScriptedEngine good = engine().stream(2, Duration.ZERO, Duration.ofMillis(1))) {
      node.register(model, "dead", ScriptedEngine.refusingEndpoint());
      node.register(model, "good", good.url());
      node.setPolicy(model, "round_robin", Map.of());
      List<Integer> attempts = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        HttpResponse<String> response = post("/v1/completions", completion(model, true));
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("x-kvrouter-worker")).hasValue("good");
        attempts.add(Integer.parseInt(response.headers().firstValue("x-kvrouter-attempts").orElseThrow()));
      }
      // round robin sends attempts to "dead" until its breaker opens after two failures, then never again
      assertThat(attempts.stream().filter(a -> a == 2).count()).isEqualTo(2);
      assertThat(attempts.subList(4, 8)).containsOnly(1);
      assertThat(node.front.breakers().snapshot(model)).singleElement().satisfies(b -> {
        assertThat(b.workerId()).isEqualTo("dead");
        assertThat(b.state()).isEqualTo(CircuitBreakers.State.OPEN);
        assertThat(b.trips()).isEqualTo(1);
      });
      assertThat(node.registry.find("kvrouter.front.retries").tag("model", model).tag("reason", "refused").counter()
          .count()).isEqualTo(2.0);
      assertThat(node.registry.find("kvrouter.front.breaker.state").tag("worker", "dead").gauge().value())
          .isEqualTo(1.0);
      noBookingLeft(model);
    }
  }

  @Test
  void fiveHundreds429sAndCutsBeforeTheFirstByteAreRetriedOnAnotherWorker() throws Exception {
    String model = model();
    try (ScriptedEngine unavailable = engine().status(503); ScriptedEngine limited = engine().status(429);
         ScriptedEngine cut = engine().mode(ScriptedEngine.Mode.CUT_BEFORE_FIRST);
         ScriptedEngine good = engine().stream(2, Duration.ZERO, Duration.ofMillis(1))) {
      node.register(model, "unavailable", unavailable.url());
      node.register(model, "limited", limited.url());
      node.register(model, "cut", cut.url());
      node.register(model, "good", good.url());
      node.setPolicy(model, "round_robin", Map.of());
      int requests = 0;
      // until every bad worker's breaker is open (two failures each); bounded
      while (node.front.breakers().snapshot(model).stream().filter(b -> b.state() == CircuitBreakers.State.OPEN)
          .count() < 3 && requests++ < 30) {
        HttpResponse<String> response = post("/v1/completions", completion(model, requests % 2 == 0));
        if (response.statusCode() == 200) {
          assertThat(response.headers().firstValue("x-kvrouter-worker")).hasValue("good");
        } else {
          // three bad workers and three attempts: a request may meet all three before their breakers open
          assertThat(response.statusCode()).isEqualTo(502);
          assertThat(JSON.readTree(response.body()).at("/error/code").asText()).isEqualTo("ENGINE_FAILED");
        }
      }
      assertThat(node.front.breakers().snapshot(model)).extracting(CircuitBreakers.Snapshot::workerId,
          CircuitBreakers.Snapshot::state).containsExactly(
              org.assertj.core.groups.Tuple.tuple("cut", CircuitBreakers.State.OPEN),
              org.assertj.core.groups.Tuple.tuple("limited", CircuitBreakers.State.OPEN),
              org.assertj.core.groups.Tuple.tuple("unavailable", CircuitBreakers.State.OPEN));
      // every bad worker is excluded now: the good one serves at the first attempt
      HttpResponse<String> last = post("/v1/completions", completion(model, true));
      assertThat(last.statusCode()).isEqualTo(200);
      assertThat(last.headers().firstValue("x-kvrouter-attempts")).hasValue("1");
      assertThat(node.registry.find("kvrouter.front.retries").tag("model", model).tag("reason", "status_503")
          .counter().count()).isEqualTo(2.0);
      assertThat(node.registry.find("kvrouter.front.retries").tag("model", model).tag("reason", "status_429")
          .counter().count()).isEqualTo(2.0);
      noBookingLeft(model);
    }
  }

  @Test
  void aSilentWorkerTimesOutAndTheRequestGoesElsewhere() throws Exception {
    String model = model();
    try (ScriptedEngine silent = engine().mode(ScriptedEngine.Mode.SILENT);
         ScriptedEngine good = engine().stream(2, Duration.ZERO, Duration.ofMillis(1))) {
      node.register(model, "silent", silent.url());
      node.setPolicy(model, "round_robin", Map.of());
      node.register(model, "good", good.url());
      boolean retried = false;
      for (int i = 0; i < 2; i++) {
        HttpResponse<String> response = post("/v1/completions", completion(model, true));
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("x-kvrouter-worker")).hasValue("good");
        retried |= response.headers().firstValue("x-kvrouter-attempts").orElseThrow().equals("2");
      }
      assertThat(retried).as("one of two round-robin requests met the silent worker first").isTrue();
      assertThat(node.registry.find("kvrouter.front.retries").tag("model", model).tag("reason",
          "first_byte_timeout").counter().count()).isEqualTo(1.0);
      noBookingLeft(model);
    }
  }

  @Test
  void aFailureAfterTheFirstByteEndsTheStreamWithAnErrorEvent() throws Exception {
    String model = model();
    try (ScriptedEngine cut = engine().mode(ScriptedEngine.Mode.CUT_AFTER_FIRST)) {
      node.register(model, "cut", cut.url());
      HttpResponse<String> response = post("/v1/completions", completion(model, true));
      assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
      String[] events = response.body().split("\n\n");
      assertThat(events[0]).contains(" t0");
      JsonNode error = JSON.readTree(events[1].substring("data: ".length()));
      assertThat(error.at("/error/code").asText()).isEqualTo("ENGINE_FAILED");
      assertThat(error.at("/error/message").asText()).contains("mid-stream");
      assertThat(events[2]).isEqualTo("data: [DONE]");
      assertThat(cut.seenList()).hasSize(1); // not retried
      noBookingLeft(model);
    }
  }

  @Test
  void aStreamThatStallsAfterItsFirstByteEndsAfterTheIdleTimeoutWithAnErrorEvent() throws Exception {
    String model = model();
    try (ScriptedEngine stalled = engine().mode(ScriptedEngine.Mode.STALL_AFTER_FIRST)) {
      node.register(model, "stalled", stalled.url());
      HttpResponse<String> response = post("/v1/completions", completion(model, true));
      assertThat(response.statusCode()).isEqualTo(200);
      String[] events = response.body().split("\n\n");
      assertThat(events[0]).contains(" t0");
      JsonNode error = JSON.readTree(events[1].substring("data: ".length()));
      assertThat(error.at("/error/code").asText()).isEqualTo("ENGINE_TIMEOUT");
      assertThat(error.at("/error/message").asText()).contains("sent nothing for 1500 ms");
      assertThat(events[2]).isEqualTo("data: [DONE]");
      noBookingLeft(model);
    }
  }

  @Test
  void whenEveryAttemptFailsTheClientGetsTheEnginesFailureAndNothingStaysBooked() throws Exception {
    String model = model();
    try (ScriptedEngine a = engine().status(500); ScriptedEngine b = engine().status(502)) {
      node.register(model, "a", a.url());
      node.register(model, "b", b.url());
      HttpResponse<String> response = post("/v1/chat/completions", "{\"model\":\"" + model
          + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
      assertThat(response.statusCode()).isEqualTo(502);
      JsonNode error = JSON.readTree(response.body()).get("error");
      assertThat(error.get("type").asText()).isEqualTo("upstream_error");
      assertThat(error.get("message").asText()).contains("answered HTTP 50", "no other worker");
      noBookingLeft(model);
    }
  }

  @Test
  void aClientThatDisconnectsMidStreamLeavesNoBookingAndTheEngineStreamIsCut() throws Exception {
    String model = model();
    try (ScriptedEngine engine = engine().stream(500, Duration.ZERO, Duration.ofMillis(20))) {
      node.register(model, "w1", engine.url());
      String body = completion(model, true);
      try (Socket socket = new Socket("127.0.0.1", node.front.port())) {
        OutputStream out = socket.getOutputStream();
        out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
            .getBytes(StandardCharsets.UTF_8));
        out.flush();
        InputStream in = socket.getInputStream();
        String read = "";
        byte[] buffer = new byte[4096];
        while (!read.contains(" t1")) {
          int n = in.read(buffer);
          assertThat(n).isPositive();
          read += new String(buffer, 0, n, StandardCharsets.UTF_8);
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> node.liveBookings(model) == 1);
      }
      noBookingLeft(model);
      await().atMost(Duration.ofSeconds(10)).until(() -> engine.cancelledStreams.get() == 1);
    }
  }

  @Test
  void anEnginesOwnClientErrorIsPassedThroughAndTheWorkerStaysHealthy() throws Exception {
    String model = model();
    try (ScriptedEngine engine = engine().status(400)) {
      node.register(model, "w1", engine.url());
      HttpResponse<String> response = post("/v1/completions", completion(model, false));
      assertThat(response.statusCode()).isEqualTo(400);
      assertThat(response.body()).contains("scripted");
      assertThat(engine.seenList()).hasSize(1);
      assertThat(node.front.breakers().snapshot(model)).isEmpty();
      noBookingLeft(model);
    }
  }
}
