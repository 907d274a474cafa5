package io.kvrouter.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.server.Main;
import io.kvrouter.server.RouterNode;
import io.kvrouter.sim.server.SimEngineServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A router node started by {@code Main.init} with its HTTP front on, the models file naming models/kvrouter-tiny,
 * in front of simulated vLLM engines (router-sim's engine server, tokenizing with the same model): the official
 * OpenAI Python SDK and curl as clients; engines killed before and after their first token; the engines' own prefix
 * cache counters; a bounded load with cancels and disconnects; a prefill/decode pair driven with vLLM's two-step
 * protocol. After each: the admission actor's bookings.
 */
class FrontEndToEndTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private static RouterNode node;
  private static Path models;
  private static int fleets;
  private static final List<SimulatedFleet> opened = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    models = Files.createTempFile("models", ".yaml");
    StringBuilder yaml = new StringBuilder("models:\n");
    for (int i = 1; i <= 10; i++) {
      yaml.append("  - name: org/e2e-").append(i).append("\n    tokenizer: ").append(SimulatedFleet.TINY).append('\n');
    }
    Files.writeString(models, yaml);
    node = Main.init(ConfigFactory.parseString("""
        kvrouter.grpc.port = 0
        kvrouter.management.port = 0
        kvrouter.front.port = 0
        kvrouter.epp.port = 0
        kvrouter.epp.health-port = 0
        kvrouter.front.models-file = "%s"
        kvrouter.front.first-token-timeout = 30s
        pekko.remote.artery.canonical.port = 0
        pekko.actor.serialize-messages = on
        """.formatted(models.toString().replace("\\", "\\\\"))));
  }

  @AfterAll
  static void stop() throws Exception {
    opened.forEach(SimulatedFleet::close);
    node.close();
    Files.deleteIfExists(models);
  }

  private static SimulatedFleet fleet() throws Exception {
    SimulatedFleet fleet = new SimulatedFleet("org/e2e-" + (++fleets));
    opened.add(fleet);
    return fleet;
  }

  private static int liveBookings(String model) throws Exception {
    return node.cluster().client(model).snapshot(Duration.ofSeconds(5)).toCompletableFuture()
        .get(10, TimeUnit.SECONDS).bookings().size();
  }

  private static void noBookingLeft(String model) {
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(liveBookings(model)).isZero());
  }

  private static List<JsonNode> lines(PythonProgram.Result result) throws Exception {
    assertThat(result.exitCode()).as(result.stderr()).isZero();
    List<JsonNode> out = new ArrayList<>();
    for (String line : result.stdout().strip().split("\n")) {
      out.add(JSON.readTree(line));
    }
    return out;
  }

  private static double metric(SimEngineServer engine, String name) throws Exception {
    String text = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + engine.httpPort() + "/metrics"))
        .build(), HttpResponse.BodyHandlers.ofString()).body();
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "(\\{[^}]*\\})? (\\S+)$").matcher(text);
    double sum = 0;
    while (m.find()) {
      sum += Double.parseDouble(m.group(2));
    }
    return sum;
  }

  @Test
  void theOpenAiSdkStreamsAndAnswersChatAndCompletionsThroughTheFront() throws Exception {
    SimulatedFleet fleet = fleet();
    fleet.start(4_000, 50);
    fleet.start(4_000, 50);
    fleet.register(node.cluster());
    List<JsonNode> results = lines(PythonProgram.run(120, "openai_front.py", "sdk", node.httpUrl(), fleet.model));
    assertThat(results).extracting(r -> r.get("case").asText()).containsExactly("chat", "chat-stream",
        "completion", "completion-stream", "unknown-model");
    for (JsonNode r : results.subList(0, 4)) {
      assertThat(r.get("worker").asText()).as(r.toString()).isIn("sim-0", "sim-1");
      assertThat(r.get("text").asText()).as(r.toString()).isNotEmpty();
      assertThat(r.get("finish_reason").asText()).as(r.toString()).isEqualTo("length");
    }
    assertThat(results.get(0).get("completion_tokens").asInt()).isEqualTo(8);
    // the engine merges the deltas a slower reader has not taken yet (as vLLM does): at least one chunk
    assertThat(results.get(1).get("chunks").asInt()).isPositive();
    assertThat(results.get(1).get("completion_tokens").asInt()).isEqualTo(8);
    assertThat(results.get(2).get("completion_tokens").asInt()).isEqualTo(6);
    assertThat(results.get(3).get("chunks").asInt()).isPositive();
    JsonNode unknown = results.get(4);
    assertThat(unknown.get("status").asInt()).isEqualTo(404);
    assertThat(unknown.get("code").asText()).isEqualTo("UNKNOWN_MODEL");
    noBookingLeft(fleet.model);
  }

  @Test
  void aPrefillDecodePairServesThroughTheFrontWithTheKvTransferredBetweenTheEngines() throws Exception {
    SimulatedFleet fleet = fleet();
    SimEngineServer prefill = fleet.start(4_000, 50);
    SimEngineServer decode = fleet.start(4_000, 50);
    fleet.register(node.cluster(), prefill, io.kvrouter.core.model.WorkerRole.PREFILL);
    fleet.register(node.cluster(), decode, io.kvrouter.core.model.WorkerRole.DECODE);
    String content = "Tell me about prefill and decode. ".repeat(30);
    String body = "{\"model\":\"" + fleet.model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + content
        + "\"}],\"stream\":true,\"max_tokens\":6,\"stream_options\":{\"include_usage\":true}}";
    for (String version : List.of("--http1.1", "--http2-prior-knowledge")) {
      Process curl = new ProcessBuilder("curl", "-sS", "-N", version, "-D", "-", node.httpUrl()
          + "/v1/chat/completions", "-H", "Content-Type: application/json", "-d", body).redirectErrorStream(true)
          .start();
      assertThat(curl.waitFor(60, TimeUnit.SECONDS)).isTrue();
      String out = new String(curl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(curl.exitValue()).as(out).isZero();
      assertThat(out).as(version).containsIgnoringCase("x-kvrouter-worker: " + fleet.workerId(decode))
          .containsIgnoringCase("x-kvrouter-prefill-worker: " + fleet.workerId(prefill))
          .contains("\"finish_reason\":\"length\"").endsWith("data: [DONE]\n\n");
      // the decode engine pulled the prefill engine's blocks: the prompt's full blocks arrived computed
      Matcher usage = Pattern.compile("\"cached_tokens\":(\\d+)").matcher(out);
      assertThat(usage.find()).as(out).isTrue();
      assertThat(Integer.parseInt(usage.group(1))).isGreaterThanOrEqualTo(16);
    }
    assertThat(prefill.transfers().heldCount()).isZero();
    // the prefill engine generated one token per request, the decode engine the rest
    assertThat(metric(prefill, "vllm:generation_tokens_total")).isEqualTo(2.0);
    assertThat(metric(decode, "vllm:generation_tokens_total")).isEqualTo(12.0);
    noBookingLeft(fleet.model);

    // a decode engine gone after the prefill: the pair is released, the prefill engine keeps the KV it offered
    decode.close();
    HttpResponse<String> failed = HTTP.send(HttpRequest.newBuilder(URI.create(node.httpUrl()
            + "/v1/chat/completions")).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).timeout(Duration.ofSeconds(60)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(failed.statusCode()).as(failed.body()).isEqualTo(502);
    assertThat(failed.body()).contains(fleet.workerId(decode));
    assertThat(prefill.transfers().heldCount()).isEqualTo(1);
    noBookingLeft(fleet.model);
  }

  @Test
  void curlStreamsAChatCompletionAndSeesTheWorkerHeaderOverHttp1AndH2c() throws Exception {
    SimulatedFleet fleet = fleet();
    fleet.start(4_000, 50);
    fleet.register(node.cluster());
    String body = "{\"model\":\"" + fleet.model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello!\"}],"
        + "\"stream\":true,\"max_tokens\":5}";
    for (String version : List.of("--http1.1", "--http2-prior-knowledge")) {
      Process curl = new ProcessBuilder("curl", "-sS", "-N", version, "-D", "-", node.httpUrl()
          + "/v1/chat/completions", "-H", "Content-Type: application/json", "-d", body).redirectErrorStream(true)
          .start();
      assertThat(curl.waitFor(60, TimeUnit.SECONDS)).isTrue();
      String out = new String(curl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(curl.exitValue()).as(out).isZero();
      assertThat(out).as(version).startsWith(version.equals("--http1.1") ? "HTTP/1.1 200" : "HTTP/2 200")
          .containsIgnoringCase("x-kvrouter-worker: sim-0").contains("\"role\":\"assistant\"")
          .contains("\"finish_reason\":\"length\"").endsWith("data: [DONE]\n\n");
    }
    noBookingLeft(fleet.model);
  }

  @Test
  void aRepeatedLongPrefixIsServedByTheEngineThatCachedIt() throws Exception {
    SimulatedFleet fleet = fleet();
    SimEngineServer a = fleet.start(4_000, 50);
    SimEngineServer b = fleet.start(4_000, 50);
    fleet.register(node.cluster());
    List<JsonNode> results = lines(PythonProgram.run(120, "openai_front.py", "prefix", node.httpUrl(), fleet.model,
        "6"));
    String worker = results.get(0).get("worker").asText();
    assertThat(results).extracting(r -> r.get("worker").asText()).containsOnly(worker);
    SimEngineServer cached = fleet.workerId(a).equals(worker) ? a : b;
    SimEngineServer other = cached == a ? b : a;
    int prompt = results.get(0).get("prompt_tokens").asInt();
    assertThat(prompt).isGreaterThan(1_000);
    // every request after the first found the shared system prompt in that engine's cache (its own counter)
    for (JsonNode r : results.subList(1, 6)) {
      assertThat(r.get("cached_tokens").asInt()).as(r.toString()).isGreaterThan(prompt / 2);
    }
    assertThat(metric(cached, "vllm:prefix_cache_hits_total")).isGreaterThan(5.0 * prompt / 2);
    assertThat(metric(other, "vllm:prefix_cache_queries_total")).isZero();
    noBookingLeft(fleet.model);
  }

  @Test
  void anEngineKilledBeforeItsFirstTokenIsReplacedByAnother() throws Exception {
    SimulatedFleet fleet = fleet();
    SimEngineServer slow = fleet.start(4_000, 0.0001); // its first engine step lasts about a minute
    SimEngineServer fast = fleet.start(4_000, 50);
    fleet.register(node.cluster(), slow);
    String body = "{\"model\":\"" + fleet.model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
        + "\"stream\":true,\"max_tokens\":4}";
    CompletableFuture<HttpResponse<String>> response = HTTP.sendAsync(HttpRequest.newBuilder(URI.create(
            node.httpUrl() + "/v1/chat/completions")).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).timeout(Duration.ofSeconds(60)).build(),
        HttpResponse.BodyHandlers.ofString());
    // booked on the slow engine (forwarded to it or about to be: either way it fails before the first token)
    await().atMost(Duration.ofSeconds(10)).until(() -> liveBookings(fleet.model) == 1);
    fleet.register(node.cluster(), fast);
    slow.close();
    HttpResponse<String> answer = response.get(60, TimeUnit.SECONDS);
    assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
    assertThat(answer.headers().firstValue("x-kvrouter-worker")).as(answer.body()).hasValue(fleet.workerId(fast));
    assertThat(answer.headers().firstValue("x-kvrouter-attempts")).hasValue("2");
    assertThat(answer.body()).contains("\"finish_reason\":\"length\"").endsWith("data: [DONE]\n\n");
    noBookingLeft(fleet.model);
  }

  @Test
  void anEngineKilledAfterItsFirstTokenEndsTheStreamWithAnErrorEventTheSdkRaises() throws Exception {
    SimulatedFleet fleet = fleet();
    SimEngineServer engine = fleet.start(4_000, 0.01); // a token every ~0.6 s
    fleet.register(node.cluster());
    Process python = new ProcessBuilder(PythonProgram.python().toString(), "-u",
        Path.of("src/test/python/openai_front.py").toAbsolutePath().toString(), "error-event", node.httpUrl(),
        fleet.model).start();
    try {
      BufferedReader stderr = new BufferedReader(new InputStreamReader(python.getErrorStream(),
          StandardCharsets.UTF_8));
      String line;
      do {
        line = stderr.readLine();
        assertThat(line).as("the SDK's first chunks").isNotNull();
      } while (!line.contains("first-chunks"));
      assertThat(liveBookings(fleet.model)).isEqualTo(1);
      engine.close();
      python.getOutputStream().write('\n');
      python.getOutputStream().flush();
      assertThat(python.waitFor(60, TimeUnit.SECONDS)).isTrue();
      JsonNode result = JSON.readTree(new String(python.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
      assertThat(result.get("error").asText()).contains("failed mid-stream");
      assertThat(result.get("code").asText()).isEqualTo("ENGINE_FAILED");
      assertThat(result.get("chunks").asInt()).isGreaterThanOrEqualTo(2);
    } finally {
      python.destroyForcibly();
    }
    noBookingLeft(fleet.model);
  }

  @Test
  void aFailingWorkersBreakerShowsInTheStateRouteAndEveryFrontSeriesInTheMetrics() throws Exception {
    SimulatedFleet fleet = fleet();
    fleet.start(4_000, 50);
    fleet.register(node.cluster());
    int refusing;
    try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
      refusing = socket.getLocalPort();
    }
    node.cluster().client(fleet.model).register(new io.kvrouter.core.model.WorkerConfig("dead", 0, 1, 8192, 4000, 16,
        "http://127.0.0.1:" + refusing, node.cluster().region(), io.kvrouter.core.model.WorkerRole.AGGREGATED),
        Duration.ofSeconds(10)).toCompletableFuture().get();
    node.cluster().client(fleet.model).setPolicy("round_robin", java.util.Map.of(), Duration.ofSeconds(10))
        .toCompletableFuture().get();
    String body = "{\"model\":\"" + fleet.model + "\",\"prompt\":\"Hi there\",\"max_tokens\":3,\"stream\":true}";
    for (int i = 0; i < 8; i++) {
      HttpResponse<String> answer = HTTP.send(HttpRequest.newBuilder(URI.create(node.httpUrl() + "/v1/completions"))
          .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(answer.statusCode()).isEqualTo(200);
      assertThat(answer.headers().firstValue("x-kvrouter-worker")).hasValue("sim-0");
    }
    JsonNode state = JSON.readTree(HTTP.send(HttpRequest.newBuilder(URI.create(node.managementUrl()
        + "/models/state?model=" + java.net.URLEncoder.encode(fleet.model, StandardCharsets.UTF_8))).build(),
        HttpResponse.BodyHandlers.ofString()).body());
    assertThat(state.get("breakers")).hasSize(1);
    assertThat(state.at("/breakers/0/workerId").asText()).isEqualTo("dead");
    assertThat(state.at("/breakers/0/state").asText()).isEqualTo("OPEN");
    assertThat(state.at("/breakers/0/trips").asInt()).isEqualTo(1);
    String metrics = HTTP.send(HttpRequest.newBuilder(URI.create(node.managementUrl() + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    String model = "model=\"" + fleet.model + "\"";
    assertThat(metrics).contains("kvrouter_front_breaker_state{" + model + ",worker=\"dead\"} 1.0")
        .contains("kvrouter_front_breaker_trips_total{" + model + ",worker=\"dead\"} 1.0")
        .contains("kvrouter_front_requests_total{endpoint=\"/v1/completions\"," + model + ",status=\"200\"} 8.0")
        .contains("kvrouter_front_retries_total{" + model + ",reason=\"refused\"} 3.0")
        .contains("kvrouter_front_ttft_seconds_bucket{" + model)
        .contains("kvrouter_front_inter_token_seconds_bucket{" + model)
        .contains("kvrouter_front_routing_seconds_bucket{" + model)
        .contains("kvrouter_front_requests_active");
    noBookingLeft(fleet.model);
  }

  @Test
  void aClientThatDisconnectsMidStreamLeavesNoBooking() throws Exception {
    SimulatedFleet fleet = fleet();
    fleet.start(4_000, 2);
    fleet.register(node.cluster());
    List<JsonNode> results = lines(PythonProgram.run(120, "openai_front.py", "disconnect", node.httpUrl(),
        fleet.model));
    assertThat(results.get(0).get("chunks").asInt()).isEqualTo(3);
    noBookingLeft(fleet.model);
  }

  @Test
  void aBoundedLoadWithCancelsAndDisconnectsEndsWithNoLiveBookingAndWellFormedAnswers() throws Exception {
    SimulatedFleet fleet = fleet();
    fleet.start(8_000, 50);
    fleet.start(8_000, 50);
    fleet.register(node.cluster());
    JsonNode load = lines(PythonProgram.run(300, "openai_front.py", "load", node.httpUrl(), fleet.model, "80", "16"))
        .get(0);
    assertThat(load.get("malformed").asInt()).as(load.toString()).isZero();
    assertThat(load.get("errors").asInt()).as(load.toString()).isZero();
    assertThat(load.get("complete").asInt()).isEqualTo(20);
    assertThat(load.get("closed").asInt()).isEqualTo(20);
    assertThat(load.get("plain").asInt() + load.get("gave_up").asInt()).isEqualTo(40);
    assertThat(load.get("gave_up").asInt()).isPositive();
    noBookingLeft(fleet.model);
  }
}
