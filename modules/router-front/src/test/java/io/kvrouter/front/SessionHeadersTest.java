package io.kvrouter.front;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvrouter.core.replication.SessionBinding;
import io.kvrouter.front.testkit.FrontNode;
import io.kvrouter.front.testkit.ScriptedEngine;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The front's session headers: {@code x-kvrouter-session}, {@code x-session-id} and Dynamo's
 * {@code X-Dynamo-Session-ID} each bind the conversation to the worker its first request went to, under a policy
 * (round_robin) that would otherwise move every request on; {@code x-kvrouter-session-mode} picks the mode, and a
 * mode it does not know is a 400 that books nothing.
 */
class SessionHeadersTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MODEL = "org/sessions";
  private static FrontNode node;
  private static final List<ScriptedEngine> engines = new java.util.ArrayList<>();

  @BeforeAll
  static void start() {
    node = FrontNode.start("");
    for (int i = 1; i <= 3; i++) {
      ScriptedEngine engine = ScriptedEngine.start(node.kit.system()).stream(2, Duration.ZERO, Duration.ofMillis(1));
      engines.add(engine);
      node.register(MODEL, "w" + i, engine.url());
    }
    node.setPolicy(MODEL, "round_robin", Map.of("seed", "3"));
  }

  @AfterAll
  static void stop() {
    engines.forEach(ScriptedEngine::close);
    node.close();
  }

  private static HttpResponse<String> send(String... headers) throws Exception {
    java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(
            java.net.URI.create(node.url() + "/v1/completions"))
        .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
        .POST(java.net.http.HttpRequest.BodyPublishers.ofString(ForwardingTest.completion(MODEL, false)));
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return ForwardingTest.HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String worker(HttpResponse<String> response) {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    return response.headers().firstValue("x-kvrouter-worker").orElseThrow();
  }

  @Test
  void everySessionHeaderKeepsItsConversationOnOneWorker() throws Exception {
    for (String header : List.of("x-kvrouter-session", "x-session-id", "X-Dynamo-Session-ID")) {
      String session = "conversation-" + header;
      Set<String> workers = new HashSet<>();
      for (int turn = 0; turn < 6; turn++) {
        workers.add(worker(send(header, session, "x-kvrouter-session-mode", turn % 2 == 0 ? "hard" : "soft")));
      }
      assertThat(workers).as(header).hasSize(1);
      assertThat(node.snapshot(MODEL).sessions().recent()).extracting(SessionBinding::sessionId).contains(session);
    }
    // without a session round_robin spreads the same requests over the workers
    Set<String> unbound = new HashSet<>();
    for (int i = 0; i < 6; i++) {
      unbound.add(worker(send()));
    }
    assertThat(unbound).hasSize(3);
  }

  @Test
  void anUnknownSessionModeIsA400AndBindsNothing() throws Exception {
    int before = node.snapshot(MODEL).sessions().bindings();
    HttpResponse<String> response = send("x-session-id", "bad-mode", "x-kvrouter-session-mode", "sticky");
    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(JSON.readTree(response.body()).path("error").path("code").asText()).isEqualTo("INVALID_HEADER");
    assertThat(node.snapshot(MODEL).sessions().bindings()).isEqualTo(before);
    assertThat(node.liveBookings(MODEL)).isZero();
  }
}
