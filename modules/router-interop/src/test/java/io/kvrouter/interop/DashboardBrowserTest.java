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
 * narrows the page to one model. It saves the screenshot kept as router-server's {@code docs/dashboard.png}.
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
      browser.finish();
    }
    assertThat(join(router.router.release(ref(b))).getApplied()).isTrue();
  }

  /** What the page must show for {@code model}, from its state (which the test checked first). */
  private static ObjectNode expectation(String step, String model, ModelState state, int queueDepth) {
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
    // this node has no /models/explain nor /models/pools route (yet): the panels say so instead of breaking
    expected.put("decisions", NOT_AVAILABLE);
    expected.put("pools", NOT_AVAILABLE);
    return expected;
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
