package io.kvrouter.front;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the front reads beyond the body: placement taints from {@code x-kvrouter-required-taints} /
 * {@code x-kvrouter-preferred-taints} (a malformed one 400, nothing booked), a LoRA adapter named in the body's
 * {@code model} (booked for its base model with the adapter, listed by {@code GET /v1/models} with its parent), and
 * the session outcome of the Book in {@code x-kvrouter-session-outcome}.
 */
class RoutingHeadersTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MODEL = "org/headers";
  private static FrontNode node;
  private static final List<ScriptedEngine> engines = new ArrayList<>();

  @BeforeAll
  static void start() {
    node = FrontNode.start("");
    for (int i = 1; i <= 3; i++) {
      ScriptedEngine engine = ScriptedEngine.start(node.kit.system()).stream(2, Duration.ZERO, Duration.ofMillis(1));
      engines.add(engine);
      Set<String> taints = i == 2 ? Set.of("gpu=h100", "zone=eu-1") : Set.of("gpu=a100");
      java.util.SortedSet<String> adapters = i == 3 ? new TreeSet<>(Set.of("sql-lora")) : null;
      node.register(MODEL, new WorkerConfig("w" + i, 0, 1, 8192, 1000, 16, engine.url(), "", WorkerRole.AGGREGATED,
          taints, adapters));
    }
    node.setPolicy(MODEL, "round_robin", Map.of("seed", "3"));
  }

  @AfterAll
  static void stop() {
    engines.forEach(ScriptedEngine::close);
    node.close();
  }

  private static HttpResponse<String> send(String model, String... headers) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(node.url() + "/v1/completions"))
        .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(ForwardingTest.completion(model, false)));
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
  void requiredTaintsFilterTheWorkers() throws Exception {
    Set<String> workers = new HashSet<>();
    for (int i = 0; i < 6; i++) {
      workers.add(worker(send(MODEL, "x-kvrouter-required-taints", "gpu=h100, zone=eu-1")));
    }
    assertThat(workers).containsExactly("w2");
    HttpResponse<String> none = send(MODEL, "x-kvrouter-required-taints", "gpu=b200");
    assertThat(none.statusCode()).isEqualTo(400);
    assertThat(JSON.readTree(none.body()).path("error").path("code").asText()).isEqualTo("REQUIRED_TAINTS_UNMET");
    assertThat(node.liveBookings(MODEL)).isZero();
  }

  @Test
  void preferredTaintsAreSentThrough() throws Exception {
    // round_robin ignores cost; the request is accepted and served (the multiplier's effect is router-core's test)
    assertThat(worker(send(MODEL, "x-kvrouter-preferred-taints", "gpu=h100",
        "x-kvrouter-preferred-taint-multiplier", "0.25"))).isNotBlank();
  }

  @Test
  void malformedTaintHeadersAre400AndBookNothing() throws Exception {
    List<String[]> bad = List.of(
        new String[] {"x-kvrouter-required-taints", "gpu=h100,,zone=eu"},
        new String[] {"x-kvrouter-required-taints", "-leading-dash"},
        new String[] {"x-kvrouter-preferred-taints", "gpu h100"},
        new String[] {"x-kvrouter-preferred-taint-multiplier", "lots"},
        new String[] {"x-kvrouter-preferred-taint-multiplier", "1.5"});
    long before = engines.stream().mapToLong(e -> e.seenList().size()).sum();
    for (String[] header : bad) {
      HttpResponse<String> response = send(MODEL, header[0], header[1]);
      assertThat(response.statusCode()).as(header[0] + ": " + header[1]).isEqualTo(400);
      assertThat(JSON.readTree(response.body()).path("error").path("code").asText())
          .isIn("INVALID_TAINT", "INVALID_HEADER", "MALFORMED");
    }
    assertThat(node.liveBookings(MODEL)).isZero();
    assertThat(engines.stream().mapToLong(e -> e.seenList().size()).sum()).isEqualTo(before);
  }

  @Test
  void anAdapterNameRoutesToTheBaseModelsWorkerThatHasIt() throws Exception {
    Set<String> workers = new HashSet<>();
    for (int i = 0; i < 4; i++) {
      workers.add(worker(send("sql-lora")));
    }
    assertThat(workers).containsExactly("w3");
    // the body goes on unchanged: the engine serves the adapter by its name
    assertThat(engines.get(2).seenList().get(engines.get(2).seenList().size() - 1).body())
        .contains("\"model\":\"sql-lora\"");
    assertThat(send("no-such-adapter").statusCode()).isEqualTo(404);
  }

  @Test
  void modelsListAdaptersWithTheirParent() throws Exception {
    HttpResponse<String> response = ForwardingTest.HTTP.send(HttpRequest.newBuilder(
        URI.create(node.url() + "/v1/models")).GET().build(), HttpResponse.BodyHandlers.ofString());
    JsonNode adapter = null;
    for (JsonNode entry : JSON.readTree(response.body()).path("data")) {
      if (entry.path("id").asText().equals("sql-lora")) {
        adapter = entry;
      }
    }
    assertThat(adapter).isNotNull();
    assertThat(adapter.path("parent").asText()).isEqualTo(MODEL);
  }

  @Test
  void theSessionOutcomeIsInTheResponse() throws Exception {
    HttpResponse<String> first = send(MODEL, "x-session-id", "outcome-1");
    HttpResponse<String> second = send(MODEL, "x-session-id", "outcome-1");
    assertThat(first.headers().firstValue("x-kvrouter-session-outcome")).hasValue("bound");
    assertThat(second.headers().firstValue("x-kvrouter-session-outcome")).hasValue("kept");
    assertThat(send(MODEL).headers().firstValue("x-kvrouter-session-outcome")).isEmpty();
  }
}
