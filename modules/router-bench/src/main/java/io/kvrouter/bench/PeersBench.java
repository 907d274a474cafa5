package io.kvrouter.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.v1.AdminGrpc;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.bench.transport.ProcStat;
import java.io.BufferedWriter;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bench peers}: kvrouter against the routers people run today, one at a time on the same simulated engines
 * ({@code bin/sim engines}), the same workload and seed, loaded by NVIDIA's aiperf replaying router-sim's workloads as
 * Mooncake-format traces. Per router: the prompt-token hit rate from the engines' own counters, TTFT and end-to-end
 * latency and output tokens/s as aiperf measured them, the router's CPU per request from /proc, and how evenly the
 * engines were loaded. The peers and aiperf come from the peers' Python environment ({@code .venv-peers},
 * {@code bin/python-env}); a router that cannot run is reported with its error.
 */
@Command(name = "peers", mixinStandardHelpOptions = true, description = "kvrouter (kv with KV events, kv approximate, "
    + "round_robin) against SGLang's gateway (smg cache_aware, round_robin), vllm-router (cache_aware) and Dynamo's "
    + "selection service, on the same simulated engines and aiperf-replayed traces (writes results/peers.md and "
    + "results/peers.svg).")
public final class PeersBench implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MODEL = "org/llama-8b";
  /** aiperf names the tokenizer as a hub id and finds it in this run's own hub cache (see {@link #hubCache}). */
  private static final String TOKENIZER_ID = "kvrouter/kvrouter-tiny";
  static final List<String> ALL_ROUTERS = List.of("kvrouter-kv", "kvrouter-approx", "kvrouter-text", "kvrouter-rr",
      "smg-cache-aware",
      "smg-rr", "vllm-router-cache-aware", "dynamo-select");

  @Option(names = "--workloads", split = ",", defaultValue = "multi-turn,agent,mooncake",
      description = "multi-turn, agent (router-sim's session workloads as multi-turn traces), mooncake (the sample)")
  List<String> workloads;
  @Option(names = "--routers", split = ",", description = "which routers, in order (default: all: "
      + "kvrouter-kv, kvrouter-approx, kvrouter-text, kvrouter-rr, smg-cache-aware, smg-rr, vllm-router-cache-aware, "
      + "dynamo-select)")
  List<String> routers;
  @Option(names = "--engines", defaultValue = "4")
  int engines;
  @Option(names = "--time-scale", defaultValue = "20", description = "the engines' simulated time speed-up; the "
      + "traces' arrival times and think times are divided by it")
  double timeScale;
  @Option(names = "--kv-blocks", defaultValue = "8000", description = "KV blocks of 16 tokens per engine")
  int kvBlocks;
  @Option(names = "--multi-turn-sessions", defaultValue = "100")
  int multiTurnSessions;
  @Option(names = "--agent-sessions", defaultValue = "60")
  int agentSessions;
  @Option(names = "--mooncake-requests", defaultValue = "800", description = "the first N entries of the sample")
  int mooncakeRequests;
  @Option(names = "--seed", defaultValue = "42", description = "the session workloads' and aiperf's seed")
  long seed;
  @Option(names = "--warmup-requests", defaultValue = "300", description = "streamed chat completions of unique "
      + "prompts sent through each router before its run (8 at a time, bounded by 120 s), after which the engines' "
      + "prefix caches are reset: a JVM's JIT has compiled the request path by then, as in a serving router")
  int warmupRequests;
  @Option(names = "--run-timeout-s", defaultValue = "900", description = "bound on one aiperf run")
  int runTimeoutSeconds;
  @Option(names = "--out", description = "results directory (default: modules/router-bench/results)")
  Path out;
  @Option(names = "--file", defaultValue = "peers.md", description = "the results file's name (the chart: .svg)")
  String fileName;
  @Option(names = "--quick", description = "the smoke run: one small workload (multi-turn, 4 sessions), 2 engines, "
      + "kvrouter-kv and smg-cache-aware unless --routers says otherwise; checks that everything runs")
  boolean quick;

  /** A router under measurement: its processes (the harness for Dynamo's service), its URL, how it was set up. */
  private record Started(Process process, Process harness, URI url, String how) {}

  /** One (workload, router) measurement, or why it did not run. */
  record Row(String workload, String router, String how, String failure, int ok, int errors, double hitRate,
      double ttftP50, double ttftP99, double ttftMean, double e2eP50, double e2eMean, double outputTokensPerSecond,
      double cpuMicrosPerRequest, double jitMicrosPerRequest, double harnessMicrosPerRequest, double balance) {}

  private BenchProcesses processes;
  private List<BenchProcesses.Engine> fleet;
  private Process enginesProcess;
  private Path peersPython;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  @Override
  public Integer call() throws Exception {
    if (quick) {
      workloads = List.of("multi-turn");
      multiTurnSessions = 4;
      engines = 2;
      warmupRequests = Math.min(warmupRequests, 40);
      if (routers == null) {
        routers = List.of("kvrouter-kv", "smg-cache-aware");
      }
    }
    if (routers == null) {
      routers = ALL_ROUTERS;
    }
    for (String router : routers) {
      if (!ALL_ROUTERS.contains(router)) {
        throw new IllegalArgumentException("unknown router " + router + " (one of " + ALL_ROUTERS + ")");
      }
    }
    processes = new BenchProcesses("peers-bench");
    String loadAtStart = BenchProcesses.loadAverages();
    String started = ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'"));
    try {
      peersPython = peersPython(processes.root);
      Path aiperf = peersPython.resolveSibling("aiperf");
      if (!Files.isExecutable(aiperf)) {
        throw new IllegalStateException(aiperf + " is missing: bin/python-env creates .venv-peers from "
            + "requirements-peers.txt (aiperf is the load generator: nothing runs without it)");
      }
      Map<String, String> versions = versions();
      Path hub = hubCache();
      List<Row> rows = new ArrayList<>();
      Map<String, String> traces = new LinkedHashMap<>();
      for (String workload : workloads) {
        Trace trace = trace(workload);
        traces.put(workload, trace.description());
        for (String router : routers) {
          rows.add(measure(workload, trace, router, aiperf, hub));
        }
      }
      Path file = PeersReport.write(this, rows, traces, versions, started, loadAtStart, processes.logs);
      Progress.line("peers", "wrote %s", file);
      boolean kvrouterRan = rows.stream().anyMatch(r -> r.router().startsWith("kvrouter") && r.failure() == null);
      return kvrouterRan ? 0 : 1;
    } finally {
      processes.close();
    }
  }

  /** The peers' environment's python: {@code KVROUTER_PEERS_PYTHON}, else {@code <repo>/.venv-peers/bin/python}. */
  static Path peersPython(Path root) {
    String given = System.getenv("KVROUTER_PEERS_PYTHON");
    Path python = given != null && !given.isBlank() ? Path.of(given) : root.resolve(".venv-peers/bin/python");
    if (!Files.isExecutable(python)) {
      throw new IllegalStateException(python + " is missing: run bin/python-env (it creates .venv-peers from "
          + "requirements-peers.txt: aiperf, smg, vllm-router, ai-dynamo)");
    }
    return python;
  }

  // ---------------------------------------------------------------- the workloads

  /** A trace ready for aiperf: the file (times already divided by the time scale) and its hash-id block size. */
  record Trace(Path file, int blockTokens, String description) {}

  private Trace trace(String workload) throws Exception {
    Path raw = processes.logs.resolve(workload + "-trace.jsonl");
    int blockTokens;
    String description;
    switch (workload) {
      case "multi-turn", "agent" -> {
        int sessions = workload.equals("agent") ? agentSessions : multiTurnSessions;
        Process generate = processes.launch(workload + "-trace", List.of(processes.root.resolve(
            "modules/router-sim/bin/sim").toString(), "generate-trace", "--kind", workload, "--sessions",
            Integer.toString(sessions), "--session-seed", Long.toString(seed), "--out", raw.toString()), Map.of());
        if (!generate.waitFor(300, TimeUnit.SECONDS) || generate.exitValue() != 0) {
          generate.destroyForcibly();
          throw new IllegalStateException("bin/sim generate-trace failed: " + Files.readString(
              processes.log(workload + "-trace")));
        }
        blockTokens = 100;
        description = String.format(Locale.ROOT, "router-sim's `%s` workload (`bin/sim generate-trace --kind %s "
            + "--sessions %d --session-seed %d`: %s), replayed by aiperf as multi-turn sessions (each turn a think "
            + "time after the previous one finished, the conversation's history and the engine's answers carried by "
            + "aiperf as chat messages), hash ids of 100 tokens", workload, workload, sessions, seed,
            workload.equals("agent") ? "4 tool preambles of 6,000 tokens, 8-20 turns of 50-300 tool-result and "
                + "20-120 output tokens, think time 1 s, sessions at 1/s"
                : "8 system prompts of 1,000 tokens, 6-14 turns of 200-600 user and 200-600 output tokens, "
                + "think time 30 s, sessions at 1.5/s");
      }
      case "mooncake" -> {
        List<String> lines = Files.readAllLines(processes.root.resolve(
            "modules/router-sim/traces/mooncake-sample.jsonl"));
        Files.write(raw, fullBlocksOnly(lines.subList(0, Math.min(mooncakeRequests, lines.size())), 512));
        blockTokens = 512;
        description = String.format(Locale.ROOT, "the first %d entries of router-sim's Mooncake-format sample "
            + "(`traces/mooncake-sample.jsonl`: chat sessions, questions on 40 Zipf-popular shared documents, "
            + "one-off prompts), replayed by aiperf at their timestamps, hash ids of 512 tokens (a request's last, "
            + "partial block renamed to an id of its own: aiperf 0.13.0 refuses an id that is a partial block in one "
            + "request and a whole one in another, which the sample's chat sessions have)",
            Math.min(mooncakeRequests, lines.size()));
      }
      default -> throw new IllegalArgumentException("unknown workload " + workload
          + " (multi-turn, agent, mooncake)");
    }
    Path scaled = processes.logs.resolve(workload + "-trace-scaled.jsonl");
    try (BufferedWriter writer = Files.newBufferedWriter(scaled, StandardCharsets.UTF_8)) {
      for (String line : Files.readAllLines(raw)) {
        if (line.isBlank()) {
          continue;
        }
        ObjectNode entry = (ObjectNode) JSON.readTree(line);
        for (String field : List.of("timestamp", "delay")) {
          if (entry.has(field)) {
            entry.put(field, entry.get(field).asDouble() / timeScale);
          }
        }
        writer.write(JSON.writeValueAsString(entry));
        writer.write('\n');
      }
    }
    return new Trace(scaled, blockTokens, description);
  }

  /**
   * The trace with every request's last hash id replaced by a fresh one where that block is partial
   * ({@code input_length} not a multiple of {@code blockTokens}). In the Mooncake format a later turn's whole block
   * can carry the id of an earlier turn's partial last block (its tokens continue them); aiperf 0.13.0 materializes
   * each id at one size only and refuses such a trace ("hash_id N requested at 512 tokens but was already
   * materialized at M tokens"). Only that partial block's reuse is lost.
   */
  static List<String> fullBlocksOnly(List<String> lines, int blockTokens) throws IOException {
    long next = 0;
    List<ObjectNode> entries = new ArrayList<>();
    for (String line : lines) {
      if (line.isBlank()) {
        continue;
      }
      ObjectNode entry = (ObjectNode) JSON.readTree(line);
      for (JsonNode id : entry.path("hash_ids")) {
        next = Math.max(next, id.asLong() + 1);
      }
      entries.add(entry);
    }
    List<String> out = new ArrayList<>();
    for (ObjectNode entry : entries) {
      JsonNode ids = entry.path("hash_ids");
      if (ids.size() > 0 && entry.path("input_length").asLong() % blockTokens != 0) {
        ((com.fasterxml.jackson.databind.node.ArrayNode) ids).set(ids.size() - 1, next++);
      }
      out.add(JSON.writeValueAsString(entry));
    }
    return out;
  }

  // ---------------------------------------------------------------- one measurement

  /**
   * A fresh fleet for every row: the engines' processes of the previous row stopped and new ones started (the same
   * configuration, new ports), so that no router attaches to engines whose KV event history holds other rows'
   * traffic. A router connecting late replays what the engine still buffers (the last 10,000 batches): chains whose
   * first blocks are older are unknown to it, and Dynamo's indexer then logs every such store and removal, so the
   * routers that read KV events would be measured on their handling of a partial history rather than on routing.
   */
  private void freshEngines() throws Exception {
    if (enginesProcess != null) {
      processes.stop(enginesProcess);
    }
    Files.deleteIfExists(processes.enginesFile());
    fleet = processes.startEngines(engines, timeScale, kvBlocks, MODEL, List.of());
    enginesProcess = processes.lastStarted();
    Progress.line("peers", "%d fresh engines: %s", fleet.size(), fleet.stream().map(BenchProcesses.Engine::baseUrl)
        .toList());
  }

  private Row measure(String workload, Trace trace, String router, Path aiperf, Path hub) {
    Started target = null;
    String stage = "starting the engines";
    try {
      freshEngines();
      stage = "starting the router";
      target = start(router);
      Started started = target;
      stage = "probing the router";
      BenchProcesses.awaitCondition(router + " answering", Duration.ofSeconds(30), () -> {
        try {
          probe(router, started.url());
          return true;
        } catch (IOException e) {
          return false;
        }
      });
      stage = "warming up";
      warmUp(target.url());
      stage = "resetting the engines' prefix caches";
      resetEngines();
      stage = "running aiperf";
      Map<String, double[]> before = counters();
      long cpuBefore = BenchProcesses.treeTicks(target.process());
      long jitBefore = ProcStat.compilerTicks(target.process().pid());
      long harnessBefore = BenchProcesses.treeTicks(target.harness());
      Path artifacts = processes.logs.resolve("aiperf-" + workload + "-" + router);
      List<String> command = new ArrayList<>(List.of(aiperf.toString(), "profile", "--model", MODEL, "--url",
          target.url().toString(), "--endpoint-type", "chat", "--streaming", "--custom-dataset-type",
          "mooncake_trace", "--input-file", trace.file().toString(), "--fixed-schedule", "--tokenizer",
          TOKENIZER_ID, "--isl-block-size", Integer.toString(trace.blockTokens()), "--extra-inputs",
          "ignore_eos:true", "--use-server-token-count", "--random-seed", Long.toString(seed), "--ui-type", "none",
          "--no-server-metrics", "--no-gpu-telemetry", "--artifact-dir", artifacts.toString()));
      Map<String, String> env = Map.of("HF_HUB_CACHE", hub.toString(), "HF_HUB_OFFLINE", "1",
          "TRANSFORMERS_OFFLINE", "1");
      Progress.line("peers", "%s / %s: aiperf replaying %s", workload, router, trace.file().getFileName());
      Process load = processes.launch("aiperf-" + workload + "-" + router, command, env);
      if (!load.waitFor(runTimeoutSeconds, TimeUnit.SECONDS)) {
        processes.stop(load);
        throw new IllegalStateException("aiperf did not finish within " + runTimeoutSeconds + " s");
      }
      long cpuAfter = BenchProcesses.treeTicks(target.process());
      long jitAfter = ProcStat.compilerTicks(target.process().pid());
      long harnessAfter = BenchProcesses.treeTicks(target.harness());
      awaitEnginesIdle();
      Map<String, double[]> after = counters();
      Path export = artifacts.resolve("profile_export_aiperf.json");
      if (load.exitValue() != 0 || !Files.exists(export)) {
        throw new IllegalStateException("aiperf exited " + load.exitValue() + ": " + tail(processes.log(
            "aiperf-" + workload + "-" + router), 600));
      }
      JsonNode result = JSON.readTree(export.toFile());
      int ok = (int) result.path("request_count").path("avg").asDouble(0);
      int errors = (int) result.path("error_request_count").path("avg").asDouble(0);
      double ticks = ProcStat.clockTicksPerSecond();
      int answered = Math.max(1, ok);
      double hits = 0;
      double queries = 0;
      double maxPrompt = 0;
      double sumPrompt = 0;
      for (BenchProcesses.Engine engine : fleet) {
        double[] b = before.get(engine.workerId());
        double[] a = after.get(engine.workerId());
        hits += a[0] - b[0];
        queries += a[1] - b[1];
        maxPrompt = Math.max(maxPrompt, a[2] - b[2]);
        sumPrompt += a[2] - b[2];
      }
      Row row = new Row(workload, router, target.how(), null, ok, errors, queries > 0 ? hits / queries : Double.NaN,
          stat(result, "time_to_first_token", "p50"), stat(result, "time_to_first_token", "p99"),
          stat(result, "time_to_first_token", "avg"), stat(result, "request_latency", "p50"),
          stat(result, "request_latency", "avg"), stat(result, "output_token_throughput", "avg"),
          (cpuAfter - cpuBefore) * 1e6 / ticks / answered, (jitAfter - jitBefore) * 1e6 / ticks / answered,
          target.harness() == null ? Double.NaN : (harnessAfter - harnessBefore) * 1e6 / ticks / answered,
          sumPrompt > 0 ? maxPrompt / (sumPrompt / fleet.size()) : Double.NaN);
      Progress.line("peers", "%s / %s: %d ok, %d errors, hit rate %.3f, TTFT mean %.1f ms, CPU %.0f µs/request",
          workload, router, ok, errors, row.hitRate(), row.ttftMean(), row.cpuMicrosPerRequest());
      return row;
    } catch (Exception e) {
      String reason = stage + ": " + (e.getMessage() == null ? e.toString() : e.getMessage());
      Progress.line("peers", "%s / %s did not run: %s", workload, router, reason);
      return new Row(workload, router, target == null ? "" : target.how(), reason, 0, 0, Double.NaN, Double.NaN,
          Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN,
          Double.NaN);
    } finally {
      if (target != null) {
        if (target.harness() != null) {
          processes.stop(target.harness());
        }
        processes.stop(target.process());
      }
    }
  }

  private static double stat(JsonNode result, String metric, String field) {
    JsonNode value = result.path(metric).path(field);
    return value.isNumber() ? value.asDouble() : Double.NaN;
  }

  // ---------------------------------------------------------------- the routers

  private Started start(String router) throws Exception {
    List<String> urls = fleet.stream().map(BenchProcesses.Engine::baseUrl).toList();
    return switch (router) {
      case "kvrouter-kv" -> kvrouter(router, true, true, "kv");
      case "kvrouter-approx" -> kvrouter(router, false, true, "kv");
      case "kvrouter-text" -> kvrouter(router, false, false, "kv");
      case "kvrouter-rr" -> kvrouter(router, false, false, "round_robin");
      case "smg-cache-aware" -> gateway(router, "smg", List.of("launch"), "cache_aware", urls);
      case "smg-rr" -> gateway(router, "smg", List.of("launch"), "round_robin", urls);
      case "vllm-router-cache-aware" -> gateway(router, "vllm-router", List.of(), "cache_aware", urls);
      case "dynamo-select" -> dynamo(router);
      default -> throw new IllegalArgumentException("unknown router " + router);
    };
  }

  /**
   * A kvrouter node whose engine connectors read {@code bin/sim engines}' file (KV events on: the file as written;
   * off: the file without its {@code kv_events} endpoints, so the index is approximate, from the node's own Books),
   * with {@code tokens} the models file naming the engines' tokenizer (prompts tokenized and chat templates rendered
   * as the engines do), without it the front's approximate mode (64-byte chunks of the request's text hashed, as
   * smg's cache_aware matches text), the policy set through Admin.SetPolicy with its default parameters.
   */
  private Started kvrouter(String name, boolean kvEvents, boolean tokens, String policy) throws Exception {
    Path models = processes.logs.resolve("models.yaml");
    Files.writeString(models, "models:\n  - name: " + MODEL + "\n    tokenizer: "
        + processes.root.resolve("models/kvrouter-tiny") + "\n");
    Path enginesFile = processes.enginesFile();
    if (!kvEvents) {
      enginesFile = processes.logs.resolve("engines-no-events.yaml");
      List<String> kept = Files.readAllLines(processes.enginesFile()).stream()
          .filter(line -> !line.strip().startsWith("kv_events")).toList();
      Files.write(enginesFile, kept);
    }
    Map<String, String> env = new LinkedHashMap<>();
    env.put("KVROUTER_ENGINES", enginesFile.toString());
    if (tokens) {
      env.put("KVROUTER_MODELS", models.toString());
    }
    BenchProcesses.Node node = processes.kvrouter(name, env);
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", node.grpcPort()).usePlaintext().build();
    try {
      AdminGrpc.AdminBlockingStub admin = AdminGrpc.newBlockingStub(channel);
      BenchProcesses.awaitCondition(name + "'s engine connectors (workers registered"
          + (kvEvents ? ", KV events fed" : "") + ")", Duration.ofSeconds(120), () -> {
            if (!node.process().isAlive()) {
              throw new IllegalStateException(name + " exited: " + tail(processes.log(name), 2000));
            }
            try {
              ModelState state = admin.withDeadlineAfter(5, TimeUnit.SECONDS)
                  .getModelState(ModelStateRequest.newBuilder().setModel(MODEL).build());
              long available = state.getWorkersList().stream().filter(w -> w.getAvailable()).count();
              return available == fleet.size() && (!kvEvents || state.getKvEventFedWorkersCount() == fleet.size());
            } catch (io.grpc.StatusRuntimeException notYet) {
              return false;
            }
          });
      admin.withDeadlineAfter(10, TimeUnit.SECONDS).setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL)
          .setPolicy(policy).build());
    } finally {
      channel.shutdownNow();
    }
    String how = "bin/kvrouter (the front, " + (tokens ? "`KVROUTER_MODELS` naming the engines' tokenizer: prompts "
        + "tokenized with their chat template to route" : "no models file: the front's approximate mode, 64-byte "
        + "chunks of the request's text hashed") + "), engines from "
        + "`KVROUTER_ENGINES` (`bin/sim engines`' file" + (kvEvents ? ", KV events and replay endpoints"
        : " without its `kv_events` endpoints: the index is approximate, from the node's own Books") + "), policy `"
        + policy + "` with its default parameters (Admin.SetPolicy)";
    return new Started(node.process(), null, URI.create("http://127.0.0.1:" + node.httpPort()), how);
  }

  /** SGLang's gateway or vllm-router over the engines' HTTP URLs, from the peers' environment. */
  private Started gateway(String name, String executable, List<String> sub, String policy, List<String> urls)
      throws Exception {
    Path bin = peersPython.resolveSibling(executable);
    if (!Files.isExecutable(bin)) {
      throw new IllegalStateException(bin + " is missing (requirements-peers.txt, bin/python-env)");
    }
    int port = BenchProcesses.freePort();
    List<String> command = new ArrayList<>(List.of(bin.toString()));
    command.addAll(sub);
    command.addAll(List.of("--host", "127.0.0.1", "--port", Integer.toString(port), "--prometheus-host", "127.0.0.1",
        "--prometheus-port", Integer.toString(BenchProcesses.freePort()), "--policy", policy, "--log-level",
        executable.equals("smg") ? "warn" : "warning", "--worker-urls"));
    command.addAll(urls);
    Process process = processes.launch(name, command, Map.of());
    URI url = URI.create("http://127.0.0.1:" + port);
    BenchProcesses.awaitCondition(name + " serving", Duration.ofSeconds(120), () -> {
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited: " + tail(processes.log(name), 2000));
      }
      try {
        probe(name, url);
        return true;
      } catch (IOException | IllegalStateException e) {
        return false;
      }
    });
    String how = String.format(Locale.ROOT, "`%s%s --policy %s --worker-urls <engines>` with the policy's default "
        + "parameters%s", executable, sub.isEmpty() ? "" : " " + String.join(" ", sub), policy,
        policy.equals("cache_aware") ? " (over HTTP workers cache_aware is an approximate radix tree of the "
            + "requests' text per worker, with its load-balance fallback)" : "");
    return new Started(process, null, url, how);
  }

  /**
   * Dynamo's standalone selection service: it selects and forwards nothing, so the harness
   * ({@code src/main/python/dynamo_harness.py}, aiohttp) registers the engines (POST /workers, per-rank KV event and
   * replay endpoints), tokenizes each request as the engine does, calls POST /select_and_reserve, forwards to the
   * chosen engine and reports prefill done and the end of the request.
   */
  private Started dynamo(String name) throws Exception {
    int selectPort = BenchProcesses.freePort();
    Process service = processes.launch(name, List.of(peersPython.toString(), "-m", "dynamo.select_service", "--port",
        Integer.toString(selectPort), "--threads", "1"), Map.of());
    URI select = URI.create("http://127.0.0.1:" + selectPort);
    try {
      BenchProcesses.awaitCondition(name + " serving", Duration.ofSeconds(60), () -> {
        if (!service.isAlive()) {
          throw new IllegalStateException("python -m dynamo.select_service exited: "
              + tail(processes.log(name), 2000));
        }
        try {
          return http.send(HttpRequest.newBuilder(select.resolve("/health")).timeout(Duration.ofSeconds(2)).build(),
              HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
        } catch (IOException e) {
          return false;
        }
      });
      int port = BenchProcesses.freePort();
      Process harness = processes.launch(name + "-harness", List.of(peersPython.toString(),
          processes.root.resolve("modules/router-bench/src/main/python/dynamo_harness.py").toString(), "--port",
          Integer.toString(port), "--select-url", select.toString(), "--engines-file",
          processes.enginesFile().toString(), "--tokenizer", processes.root.resolve("models/kvrouter-tiny")
              .toString()), Map.of());
      BenchProcesses.awaitCondition(name + "'s harness serving and its KV event listeners ready",
          Duration.ofSeconds(120), () -> {
            if (!harness.isAlive()) {
              throw new IllegalStateException("the Dynamo harness exited: " + tail(processes.log(name + "-harness"),
                  2000));
            }
            return Files.readString(processes.log(name + "-harness")).contains("harness serving")
                && count(Files.readString(processes.log(name)), "ZMQ listener ready") >= fleet.size();
          });
      String how = "`python -m dynamo.select_service --threads 1` (ai-dynamo, KV events from every engine's ZMQ "
          + "publisher and replay socket, the default kv cost) behind the bench's forwarding harness "
          + "(`dynamo_harness.py`: tokenize with the engines' tokenizer and chat template, POST /select_and_reserve, "
          + "forward to the chosen engine, POST /reservations/{id}/prefill_complete at the first byte, "
          + "DELETE /reservations/{id} at the end)";
      return new Started(service, harness, URI.create("http://127.0.0.1:" + port), how);
    } catch (Exception e) {
      processes.stop(service);
      throw e;
    }
  }

  private static int count(String text, String what) {
    int n = 0;
    for (int at = text.indexOf(what); at >= 0; at = text.indexOf(what, at + 1)) {
      n++;
    }
    return n;
  }

  /** One small streamed chat completion through the router: it serves (the same probe for every router). */
  private void probe(String name, URI url) throws IOException {
    String body = "{\"model\":\"" + MODEL + "\",\"stream\":true,\"max_tokens\":4,\"messages\":[{\"role\":\"user\","
        + "\"content\":\"a probe of the router before the run\"}]}";
    try {
      HttpResponse<String> response = http.send(HttpRequest.newBuilder(url.resolve("/v1/chat/completions"))
          .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
          .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200 || !response.body().contains("[DONE]")) {
        throw new IllegalStateException(name + " answered " + response.statusCode() + ": "
            + response.body().substring(0, Math.min(300, response.body().length())));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  /**
   * {@link #warmupRequests} streamed chat completions of unique prompts (nothing shared with any trace) through the
   * router, 8 in flight, bounded by 120 s; failures are not counted (the run's own figures are).
   */
  private void warmUp(URI url) throws Exception {
    java.util.concurrent.Semaphore inFlight = new java.util.concurrent.Semaphore(8);
    List<java.util.concurrent.CompletableFuture<?>> sent = new ArrayList<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    java.util.SplittableRandom random = new java.util.SplittableRandom(seed ^ 0x3A7E);
    for (int i = 0; i < warmupRequests && System.nanoTime() < deadline; i++) {
      if (!inFlight.tryAcquire(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
        break;
      }
      StringBuilder prompt = new StringBuilder("warm-up request " + i + ":");
      for (int w = 0; w < 400; w++) {
        prompt.append(' ').append(Long.toString(random.nextLong() & 0xFFFFFF, 36));
      }
      String body = "{\"model\":\"" + MODEL + "\",\"stream\":true,\"max_tokens\":8,\"ignore_eos\":true,"
          + "\"messages\":[{\"role\":\"user\",\"content\":" + JSON.writeValueAsString(prompt.toString()) + "}]}";
      sent.add(http.sendAsync(HttpRequest.newBuilder(url.resolve("/v1/chat/completions"))
              .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
              .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.discarding())
          .whenComplete((response, failure) -> inFlight.release()));
    }
    for (java.util.concurrent.CompletableFuture<?> request : sent) {
      try {
        request.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException ignored) {
        // the warm-up only has to have run the request path
      }
    }
  }

  // ---------------------------------------------------------------- the engines

  /** Every engine's prefix cache emptied (vLLM's POST /reset_prefix_cache: AllBlocksCleared on its KV events). */
  private void resetEngines() throws Exception {
    awaitEnginesIdle();
    for (BenchProcesses.Engine engine : fleet) {
      HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(engine.baseUrl()
          + "/reset_prefix_cache")).POST(HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(10))
          .build(), HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        throw new IllegalStateException(engine.workerId() + " refused the prefix cache reset: "
            + response.statusCode() + " " + response.body());
      }
    }
  }

  private void awaitEnginesIdle() throws Exception {
    BenchProcesses.awaitCondition("the engines idle", Duration.ofSeconds(120), () -> {
      for (BenchProcesses.Engine engine : fleet) {
        String page = metrics(engine);
        if (sum(page, "vllm:num_requests_running") > 0 || sum(page, "vllm:num_requests_waiting") > 0) {
          return false;
        }
      }
      return true;
    });
  }

  /** Per engine: prefix-cache hits, queries and prompt tokens (its counters, summed over its ranks). */
  private Map<String, double[]> counters() throws Exception {
    Map<String, double[]> counters = new LinkedHashMap<>();
    for (BenchProcesses.Engine engine : fleet) {
      String page = metrics(engine);
      counters.put(engine.workerId(), new double[] {sum(page, "vllm:prefix_cache_hits_total"),
          sum(page, "vllm:prefix_cache_queries_total"), sum(page, "vllm:prompt_tokens_total")});
    }
    return counters;
  }

  private String metrics(BenchProcesses.Engine engine) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(engine.metricsUrl())).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString()).body();
  }

  /** The sum of a series' samples over its label sets in a Prometheus text page. */
  static double sum(String page, String series) {
    double total = 0;
    for (String line : page.split("\n")) {
      if (line.startsWith(series + "{") || line.startsWith(series + " ")) {
        String[] parts = line.strip().split("\\s+");
        total += Double.parseDouble(parts[parts.length - 1]);
      }
    }
    return total;
  }

  // ---------------------------------------------------------------- versions, tokenizer

  /** The peers' and aiperf's versions as their environment has them installed, and kvrouter's commit. */
  private Map<String, String> versions() throws Exception {
    Map<String, String> versions = new LinkedHashMap<>();
    versions.put("kvrouter", run(List.of("git", "-C", processes.root.toString(), "describe", "--always", "--dirty"))
        .strip());
    String script = "import importlib.metadata as m\n"
        + "for name in ['aiperf', 'smg', 'vllm-router', 'ai-dynamo', 'ai-dynamo-runtime']:\n"
        + "    try:\n        print(name, m.version(name))\n"
        + "    except m.PackageNotFoundError:\n        print(name, 'not installed')\n";
    for (String line : run(List.of(peersPython.toString(), "-c", script)).split("\n")) {
      String[] parts = line.strip().split(" ", 2);
      if (parts.length == 2) {
        versions.put(parts[0], parts[1]);
      }
    }
    return versions;
  }

  private String run(List<String> command) throws Exception {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getOutputStream().close();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
    return output;
  }

  /**
   * A hub cache holding models/kvrouter-tiny as the snapshot of {@value #TOKENIZER_ID}. aiperf 0.13.0 cannot take
   * the directory itself: its prompt-synthesis worker processes force offline mode, which looks the name up as a
   * hub id in the cache ("HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name'").
   */
  private Path hubCache() throws IOException {
    Path hub = processes.logs.resolve("hf-hub");
    Path model = hub.resolve("models--" + TOKENIZER_ID.replace("/", "--"));
    Path snapshot = model.resolve("snapshots/local");
    Files.createDirectories(snapshot);
    Files.createDirectories(model.resolve("refs"));
    Files.writeString(model.resolve("refs/main"), "local");
    try (var files = Files.list(processes.root.resolve("models/kvrouter-tiny"))) {
      for (Path file : files.filter(f -> f.toString().endsWith(".json")).toList()) {
        Files.copy(file, snapshot.resolve(file.getFileName()));
      }
    }
    return hub;
  }

  static String tail(Path file, int chars) {
    try {
      String text = Files.readString(file);
      return text.substring(Math.max(0, text.length() - chars)).strip();
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }
}
