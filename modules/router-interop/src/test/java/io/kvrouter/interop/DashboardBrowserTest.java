package io.kvrouter.interop;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.RankState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterClient;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerState;
import io.kvrouter.server.TestRouter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.grpc.GrpcClientSettings;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The management server's dashboard in a real browser: Debian's headless Chromium, driven by playwright-core from
 * {@code dashboard/check-dashboard.js}, against a running node with registered workers, bookings, a queued Book and
 * an overloaded worker whose load reports stopped (unavailable). The script checks the figures the page shows; then
 * bookings are released and the same page, without a reload, must show the new figures; then the model selector
 * narrows the page to one model; the decisions and pools panels are checked on answers in their routes' documented
 * formats; and a server that stops answering raises the error banner until it answers again. It saves the
 * screenshot kept as router-server's {@code docs/dashboard.png}.
 */
class DashboardBrowserTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MODEL = "org/llama-8b";
  private static final String OTHER_MODEL = "org/mistral-7b";
  private static final String NOT_AVAILABLE = "not available on this node";
  private static final int PROMPT_TOKENS = 1000;
  /** How long the script may take to launch Chromium and meet one step (it gives up on a step after 20 s). */
  private static final Duration STEP_TIMEOUT = Duration.ofSeconds(90);
  private static final String EOF = "\u0000EOF";

  private static TestRouter router;
  /** A client whose Books may wait in the admission queue for the whole test. */
  private static RouterClient patientRouter;

  @BeforeAll
  static void start() {
    // w1 reports load once, then stops: unavailable after this timeout
    router = TestRouter.start("kvrouter.admission.heartbeat-timeout = 1s");
    patientRouter = RouterClient.create(GrpcClientSettings
        .connectToServiceAt("127.0.0.1", router.node.grpcPort(), router.node.system())
        .withTls(false)
        .withDeadline(Duration.ofMinutes(5)), router.node.system());
  }

  @AfterAll
  static void stop() {
    if (patientRouter != null) {
      patientRouter.close();
    }
    if (router != null) {
      router.close();
    }
  }

  @Test
  void thePageShowsTheRouterAndFollowsItLive() throws Exception {
    join(router.workers.register(worker(MODEL, "w1").build()));
    join(router.workers.register(worker(MODEL, "w2").setDpSize(2).build()));
    join(router.workers.register(worker(OTHER_MODEL, "x1").setMaxNumBatchedTokens(4096).setTotalKvBlocks(500)
        .build()));
    // distinct in-flight figures per rank: w1/0 none, w2/0 two, w2/1 one
    Booking a = join(router.router.book(pinned("a", "w2", 0)));
    Booking b = join(router.router.book(pinned("b", "w2", 0)));
    Booking c = join(router.router.book(pinned("c", "w2", 1)));
    // queueing on (a Book waits while its ranks hold over 1 % of max_num_batched_tokens in prefill) and an
    // overload threshold that only w1's reported load (600 of 1000 KV blocks) passes
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL)
        .putParameters("queue_threshold_frac", "0.01").putParameters("active_decode_blocks_threshold", "0.5")
        .build()));
    join(router.workers.reportLoad(LoadReport.newBuilder().setModel(MODEL).setWorkerId("w1")
        .addRanks(RankLoadReport.newBuilder().setDpRank(0).setActiveDecodeBlocks(600)).build()));
    CompletionStage<Booking> queued = patientRouter.book(pinned("d", "w2", 1));
    await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> {
      ModelState state = router.state(MODEL);
      assertThat(state.getPending()).as("queued Books").isEqualTo(1);
      assertThat(workerState(state, "w1").getAvailable()).as("w1 available").isFalse();
    });
    ModelState before = router.state(MODEL);
    assertThat(before.getBookingsCount()).isEqualTo(3);
    assertRanks(before, List.of("w1/0 in flight 0 overloaded", "w2/0 in flight 2", "w2/1 in flight 1"));

    List<String> models = new ArrayList<>();
    JSON.readTree(router.managementGet("/models").body()).get("models").forEach(m -> models.add(m.asText()));
    assertThat(models).containsExactlyInAnyOrder(MODEL, OTHER_MODEL);
    Path screenshot = outputDir().resolve("dashboard.png");
    Files.deleteIfExists(screenshot);

    try (Browser browser = new Browser(router.node.managementUrl())) {
      ObjectNode initial = expectation("initial", MODEL, before, 1);
      initial.set("models", JSON.valueToTree(models));
      initial.put("screenshot", screenshot.toString());
      browser.check(initial);
      assertThat(screenshot).isNotEmptyFile();

      // freeing c's rank admits the queued Book there; freeing a lowers w2/0
      assertThat(join(router.router.release(ref(c))).getApplied()).isTrue();
      assertThat(join(queued).getSelection().getWorker().getDpRank()).isEqualTo(1);
      assertThat(join(router.router.release(ref(a))).getApplied()).isTrue();
      ModelState after = router.state(MODEL);
      assertThat(after.getBookingsList()).extracting(s -> s.getRequestId()).containsExactlyInAnyOrder("b", "d");
      assertRanks(after, List.of("w1/0 in flight 0 overloaded", "w2/0 in flight 1", "w2/1 in flight 1"));
      browser.check(expectation("after releases", MODEL, after, 0));

      ObjectNode selected = expectation("one model selected", OTHER_MODEL, router.state(OTHER_MODEL), 0);
      selected.put("select", OTHER_MODEL);
      selected.set("models", JSON.valueToTree(List.of(OTHER_MODEL)));
      browser.check(selected);

      browser.check(stubbedPanels(expectation("coming routes' formats", MODEL, router.state(MODEL), 0)));

      // the server stops answering: a banner says so over the last figures, and goes once it answers again
      ObjectNode down = JSON.createObjectNode().put("step", "server down").put("model", MODEL)
          .put("abort", "/models").put("errorBanner", "GET /models: no answer").put("liveBookings", 2);
      down.set("models", JSON.valueToTree(List.of(MODEL)));
      browser.check(down);
      ObjectNode back = JSON.createObjectNode().put("step", "server back").put("model", MODEL).put("restore", true)
          .put("liveBookings", 2);
      back.set("models", JSON.valueToTree(List.of(MODEL)));
      browser.check(back);
      browser.finish();
    }
    assertThat(join(router.router.release(ref(b))).getApplied()).isTrue();
  }

  /** What the page must show for {@code model}, from its state (which the test checked first). */
  private static ObjectNode expectation(String step, String model, ModelState state, int queueDepth)
      throws Exception {
    ObjectNode expected = JSON.createObjectNode();
    expected.put("step", step);
    expected.put("model", model);
    expected.put("queueDepth", queueDepth);
    expected.put("liveBookings", state.getBookingsCount());
    ArrayNode ranks = expected.putArray("ranks");
    for (WorkerState worker : state.getWorkersList()) {
      for (RankState rank : worker.getRanksList()) {
        ObjectNode r = ranks.addObject();
        r.put("worker", worker.getConfig().getWorkerId());
        r.put("rank", rank.getDpRank());
        r.put("inFlight", rank.getLoad().getInFlight());
        r.put("liveBookings", rank.getLiveBookings());
        r.set("prefill", JSON.valueToTree(List.of(rank.getLoad().getPrefillTokens(),
            worker.getConfig().getMaxNumBatchedTokens())));
        r.set("decode", JSON.valueToTree(List.of(rank.getLoad().getDecodeBlocks(),
            worker.getConfig().getTotalKvBlocks())));
        r.put("overloaded", rank.getOverloaded());
        r.put("available", worker.getAvailable());
      }
    }
    expected.put("decisions", decisionsNote(model));
    expected.put("pools", poolsNote(model));
    return expected;
  }

  /**
   * What the decisions panel must say: a node without the {@code /models/explain} route answers 404 there (the
   * panel says so instead of breaking the page); one with it shows a row per decision.
   */
  private static String decisionsNote(String model) throws Exception {
    HttpResponse<String> answer = router.managementGet("/models/explain?model=" + encode(model) + "&limit=10");
    if (answer.statusCode() == 404) {
      return NOT_AVAILABLE;
    }
    assertThat(answer.statusCode()).as("GET /models/explain: %s", answer.body()).isEqualTo(200);
    return rowsNote(JSON.readTree(answer.body()).path("decisions").size(), "no decision yet");
  }

  /** The same for the pools panel: the state's {@code pools} if it has them, else {@code /models/pools}. */
  private static String poolsNote(String model) throws Exception {
    JsonNode pools = JSON.readTree(router.managementGet("/models/state?model=" + encode(model)).body()).get("pools");
    if (pools == null) {
      HttpResponse<String> answer = router.managementGet("/models/pools?model=" + encode(model));
      if (answer.statusCode() == 404) {
        return NOT_AVAILABLE;
      }
      assertThat(answer.statusCode()).as("GET /models/pools: %s", answer.body()).isEqualTo(200);
      JsonNode body = JSON.readTree(answer.body());
      pools = body.isArray() ? body : body.path("pools");
    }
    return rowsNote(pools.size(), "no pool known");
  }

  private static String rowsNote(int rows, String none) {
    return rows == 0 ? none : rows + " rows";
  }

  /**
   * The panels on answers in the documented formats of {@code /models/explain} and {@code /models/pools} (given to
   * the page by the script, whether or not this node serves those routes): a row per decision and per region, the
   * stale region marked.
   */
  private static ObjectNode stubbedPanels(ObjectNode expected) throws IOException {
    expected.put("select", MODEL);
    expected.set("models", JSON.valueToTree(List.of(MODEL)));
    expected.set("stub", JSON.readTree("""
        {"explain": {"model": "%1$s", "node": "n1", "decisions": [
           {"kind": "book", "unixMs": "1796143383248", "requestId": "r-2", "policy": "kv", "viewVersion": "4",
            "requestBlocks": 63, "candidates": [
              {"workerId": "w2", "dpRank": 1, "inFlight": 1, "cost": 125.5, "costTerms": {"prefill": 125.5},
               "picked": true},
              {"workerId": "w2", "dpRank": 0, "inFlight": 2, "cost": 251, "picked": false}],
            "filtered": [{"workerId": "w1", "dpRank": 0, "reason": "OVERLOADED"}],
            "picked": {"workerId": "w2", "dpRank": 1, "endpoint": "http://w2:8000", "region": "local"},
            "pickedCost": 125.5, "runnerUpCost": 251, "hasRunnerUp": true, "margin": 125.5, "node": "n1"},
           {"kind": "select", "unixMs": "1796143382000", "requestId": "", "policy": "kv", "viewVersion": "4",
            "candidates": [{"workerId": "w1", "dpRank": 0, "cost": 3.25, "picked": true}], "filtered": [],
            "picked": {"workerId": "w1", "dpRank": 0}, "pickedCost": 3.25, "hasRunnerUp": false, "margin": 0}]},
         "pools": {"pools": [
           {"region": "eu-west", "workers": 2, "ranks": 3, "inFlight": 3, "pending": 1, "capacity": 24576,
            "load": 3000, "ageMs": "120", "stale": false, "routerEndpoints": ["router-eu-1:50051"], "epoch": "1",
            "sequence": "42"},
           {"region": "us-east", "workers": 1, "ranks": 1, "inFlight": 0, "pending": 0, "capacity": 8192,
            "load": 0, "ageMs": "65000", "stale": true, "routerEndpoints": ["router-us-1:50051"], "epoch": "1",
            "sequence": "7"}]}}
        """.formatted(MODEL)));
    expected.put("decisions", "2 rows");
    expected.put("pools", "2 rows");
    expected.set("decisionRows", JSON.readTree("""
        [{"kind": "book", "requestId": "r-2", "worker": "w2", "rank": 1},
         {"kind": "select", "requestId": "", "worker": "w1", "rank": 0}]"""));
    expected.set("poolRows", JSON.readTree("""
        [{"region": "eu-west", "stale": false}, {"region": "us-east", "stale": true}]"""));
    expected.put("screenshot", outputDir().resolve("dashboard-panels.png").toString());
    return expected;
  }

  private static String encode(String model) {
    return URLEncoder.encode(model, StandardCharsets.UTF_8);
  }

  private static void assertRanks(ModelState state, List<String> expected) {
    List<String> ranks = new ArrayList<>();
    for (WorkerState worker : state.getWorkersList()) {
      for (RankState rank : worker.getRanksList()) {
        ranks.add(worker.getConfig().getWorkerId() + "/" + rank.getDpRank() + " in flight "
            + rank.getLoad().getInFlight() + (rank.getOverloaded() ? " overloaded" : ""));
      }
    }
    assertThat(ranks).as("ranks of %s", state.getModel()).containsExactlyElementsOf(expected);
  }

  private static WorkerState workerState(ModelState state, String workerId) {
    return state.getWorkersList().stream().filter(w -> w.getConfig().getWorkerId().equals(workerId)).findFirst()
        .orElseThrow();
  }

  private static RouteRequest pinned(String requestId, String workerId, int dpRank) {
    return RouteRequest.newBuilder().setModel(MODEL).setRequestId(requestId).setIslTokens(PROMPT_TOKENS)
        .setPinnedWorker(workerId).setPinnedDpRank(dpRank).build();
  }

  private static BookingRef ref(Booking booking) {
    return BookingRef.newBuilder().setModel(MODEL).setRequestId(booking.getRequestId())
        .setAttempt(booking.getAttempt()).build();
  }

  private static Path directory(String property, String fallback) {
    return Path.of(Optional.ofNullable(System.getProperty(property)).orElse(fallback)).toAbsolutePath().normalize();
  }

  private static Path outputDir() throws IOException {
    return Files.createDirectories(directory("kvrouter.interop.log.dir", "target").resolve("dashboard"));
  }

  /** One {@code node check-dashboard.js} process: one expectation line in, "ok STEP" out, its output kept. */
  private static final class Browser implements AutoCloseable {
    private final Process process;
    private final Writer stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> output = Collections.synchronizedList(new ArrayList<>());

    Browser(String managementUrl) throws IOException {
      Path dir = directory("kvrouter.interop.dashboard.dir", "dashboard");
      if (!Files.isDirectory(dir.resolve("node_modules/playwright-core"))) {
        throw new IllegalStateException("playwright-core is not installed in " + dir + ": run `npm ci` there (the "
            + "Maven build of router-interop does it in generate-test-resources)");
      }
      String chromium = Optional.ofNullable(System.getenv("KVROUTER_CHROMIUM")).orElse("/usr/bin/chromium");
      if (!Files.isExecutable(Path.of(chromium))) {
        throw new IllegalStateException("no Chromium at " + chromium + ": install Debian's (apt-get install chromium; "
            + ".ci/run does) or set KVROUTER_CHROMIUM");
      }
      process = new ProcessBuilder("node", dir.resolve("check-dashboard.js").toString(), managementUrl)
          .directory(dir.toFile())
          .redirectErrorStream(true)
          .start();
      stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
      Thread reader = new Thread(() -> {
        try (BufferedReader out = new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
          for (String line = out.readLine(); line != null; line = out.readLine()) {
            output.add(line);
            lines.add(line);
          }
        } catch (IOException e) {
          // the process went away: reported as EOF below
        } finally {
          lines.add(EOF);
        }
      }, "check-dashboard-reader");
      reader.setDaemon(true);
      reader.start();
    }

    /** Sends one expectation and waits until the script answers that the page meets it. */
    void check(JsonNode expected) throws Exception {
      String step = expected.get("step").asText();
      stdin.write(JSON.writeValueAsString(expected) + "\n");
      stdin.flush();
      long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
      for (;;) {
        String line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (line == null || line.equals(EOF)) {
          throw new AssertionError("check-dashboard.js did not confirm step \"" + step + "\" ("
              + (line == null ? "no answer in " + STEP_TIMEOUT : "it ended") + "):\n" + output());
        }
        if (line.equals("ok " + step)) {
          return;
        }
      }
    }

    /** Ends the script's input; it must then exit 0. */
    void finish() throws Exception {
      stdin.close();
      assertThat(process.waitFor(STEP_TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("script ended").isTrue();
      assertThat(process.exitValue()).as("exit code of check-dashboard.js, output:\n%s", output()).isZero();
    }

    private String output() {
      synchronized (output) {
        return String.join("\n", output);
      }
    }

    @Override
    public void close() throws Exception {
      if (process.isAlive()) {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      }
    }
  }
}
