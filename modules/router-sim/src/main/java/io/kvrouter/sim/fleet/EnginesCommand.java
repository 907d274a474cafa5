package io.kvrouter.sim.fleet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bin/sim engines}: starts N engine processes (one JVM each), waits until each answers /health, writes the
 * engines file, and stops every process it started when it exits (Ctrl-C, SIGTERM, an engine that dies or never
 * becomes healthy). Each engine also exits by itself when this process is gone (--parent-pid), even after a SIGKILL.
 */
@Command(name = "engines", mixinStandardHelpOptions = true,
    description = "Starts N simulated vLLM engines (one process each) and writes an engines file for the router.")
public final class EnginesCommand implements Callable<Integer> {
  private static final Duration HEALTHY_WITHIN = Duration.ofSeconds(90);
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Engine i's role: the first --prefill engines prefill, the next --decode decode, the rest aggregated. */
  String role(int i) {
    return i < prefill ? "prefill" : i < prefill + decode ? "decode" : "aggregated";
  }

  @Option(names = "--count", required = true, description = "engines")
  int count;

  @Option(names = "--base-port", description = "engine i serves HTTP on base + i (0: free ports), default "
      + "${DEFAULT-VALUE}")
  int basePort = 8100;

  @Option(names = "--kv-events-base-port", description = "engine i's rank 0 publishes on base + i × dp (default "
      + "5557; free ports when --base-port is 0)")
  Integer kvEventsBase;

  @Option(names = "--kv-replay-base-port", description = "engine i's rank 0 replays on base + i × dp (default: the "
      + "events base + the next multiple of 10 at or above count × dp, so 5567 for up to 10 ranks)")
  Integer kvReplayBase;

  @Option(names = "--prefill", description = "the first N engines register as prefill workers (vLLM's two-step "
      + "P/D protocol: every simulated engine serves either step), default ${DEFAULT-VALUE}")
  int prefill = 0;

  @Option(names = "--decode", description = "the next N engines register as decode workers, default "
      + "${DEFAULT-VALUE}; the rest as aggregated ones")
  int decode = 0;

  @Option(names = "--model", description = "served model name, default ${DEFAULT-VALUE}")
  String model = "org/llama-8b";

  @Option(names = {"--dp-size", "--data-parallel-size"}, description = "ranks per engine, default ${DEFAULT-VALUE}")
  int dpSize = 1;

  @Option(names = "--time-scale", description = "simulated time runs this many times faster, default "
      + "${DEFAULT-VALUE}")
  double timeScale = 1.0;

  @Option(names = "--kv-blocks", description = "KV blocks per rank, default ${DEFAULT-VALUE}")
  int kvBlocks = 28_800;

  @Option(names = "--block-size", description = "tokens per block, default ${DEFAULT-VALUE}")
  int blockSize = 16;

  @Option(names = "--max-num-batched-tokens", description = "default ${DEFAULT-VALUE}")
  int maxBatchedTokens = 8_192;

  @Option(names = "--kv-events-encoding", description = "map | array, default ${DEFAULT-VALUE}")
  String encoding = "map";

  @Option(names = "--kv-replay-format", description = "topic | legacy, default ${DEFAULT-VALUE}")
  String replayFormat = "topic";

  @Option(names = "--seed", description = "engine i draws output tokens from seed + i, default ${DEFAULT-VALUE}")
  long seed = 42;

  @Option(names = "--tokenizer", paramLabel = "DIR", description = "every engine's tokenizer directory (see `sim "
      + "engine --help`; 'none': token-id prompts only), default the repository's models/kvrouter-tiny")
  String tokenizer;

  @Option(names = "--heap", description = "each engine's -Xmx, default ${DEFAULT-VALUE}")
  String heap = "384m";

  @Option(names = "--engines-file", required = true, paramLabel = "OUT.yaml", description = "the engines file")
  Path enginesFile;

  private final List<Process> processes = new ArrayList<>();
  private volatile boolean stopping;

  @Override
  public Integer call() throws Exception {
    if (count < 1 || dpSize < 1) {
      throw new IllegalArgumentException("--count and --dp-size must be at least 1");
    }
    if (prefill < 0 || decode < 0 || prefill + decode > count) {
      throw new IllegalArgumentException("--prefill and --decode must be at least 0 and together at most --count");
    }
    Thread stopper = new Thread(this::stopAll, "sim-engines-stop");
    Runtime.getRuntime().addShutdownHook(stopper);
    try {
      List<EnginesFile.Entry> entries = start();
      EnginesFile.write(enginesFile, entries);
      System.err.printf(Locale.ROOT, "%d engine(s) healthy; engines file %s (Ctrl-C stops them)%n", count,
          enginesFile.toAbsolutePath());
      for (EnginesFile.Entry entry : entries) {
        System.err.println("  " + entry.workerId() + " " + entry.baseUrl());
      }
      CompletableFuture<?>[] exits = processes.stream().map(Process::onExit).toArray(CompletableFuture[]::new);
      CompletableFuture.anyOf(exits).join();
      if (stopping) {
        return 0;
      }
      System.err.println("sim engines: an engine exited; stopping the others");
      return 1;
    } catch (Exception e) {
      System.err.println("sim engines: " + e.getMessage());
      return 1;
    } finally {
      stopAll();
    }
  }

  private List<EnginesFile.Entry> start() throws IOException, InterruptedException {
    boolean free = basePort == 0;
    int kvBase = kvEventsBase != null ? kvEventsBase : free ? 0 : 5557;
    int replayBase = kvReplayBase != null ? kvReplayBase
        : kvBase == 0 ? 0 : kvBase + 10 * ((count * dpSize + 9) / 10);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = System.getProperty("java.class.path");
    List<CompletableFuture<JsonNode>> ready = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      List<String> command = new ArrayList<>(List.of(java, "-Xmx" + heap, "-XX:+UseSerialGC",
          "-XX:TieredStopAtLevel=1", "-Djava.util.concurrent.ForkJoinPool.common.parallelism=2", "-cp", classpath,
          "io.kvrouter.sim.SimCli", "engine",
          "--model", model, "--port", Integer.toString(free ? 0 : basePort + i),
          "--dp-size", Integer.toString(dpSize), "--kv-blocks", Integer.toString(kvBlocks),
          "--block-size", Integer.toString(blockSize), "--max-num-batched-tokens", Integer.toString(maxBatchedTokens),
          "--time-scale", Double.toString(timeScale),
          "--kv-events-port", Integer.toString(kvBase == 0 ? 0 : kvBase + i * dpSize),
          "--kv-replay-port", Integer.toString(replayBase == 0 ? 0 : replayBase + i * dpSize),
          "--kv-events-encoding", encoding, "--kv-replay-format", replayFormat,
          "--seed", Long.toString(seed + i), "--parent-pid", Long.toString(ProcessHandle.current().pid())));
      if (tokenizer != null) {
        command.addAll(List.of("--tokenizer", tokenizer));
      }
      String home = System.getProperty("sim.home");
      if (home != null) {
        command.add(1, "-Dsim.home=" + home);
      }
      Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      processes.add(process);
      ready.add(readyLine(process, "sim-" + i));
    }
    List<EnginesFile.Entry> entries = new ArrayList<>();
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    for (int i = 0; i < count; i++) {
      JsonNode ports;
      try {
        ports = ready.get(i).get(HEALTHY_WITHIN.toSeconds(), TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new IOException("engine sim-" + i + " did not start within " + HEALTHY_WITHIN.toSeconds() + " s: "
            + e.getMessage());
      }
      EnginesFile.Entry entry = new EnginesFile.Entry(model, "sim-" + i, "127.0.0.1",
          ports.get("http_port").asInt(), ports.get("kv_events_port").asInt(), ports.get("kv_replay_port").asInt(),
          "kv-events", dpSize, blockSize, kvBlocks, maxBatchedTokens, role(i));
      awaitHealthy(http, entry);
      entries.add(entry);
    }
    return entries;
  }

  /** The ports the engine reports once it serves; its other stdout lines go to our stderr. */
  private static CompletableFuture<JsonNode> readyLine(Process process, String name) {
    CompletableFuture<JsonNode> ready = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(),
          StandardCharsets.UTF_8))) {
        String line;
        while ((line = lines.readLine()) != null) {
          if (line.startsWith(EngineCommand.READY + " ")) {
            ready.complete(JSON.readTree(line.substring(EngineCommand.READY.length() + 1)));
          } else {
            System.err.println("[" + name + "] " + line);
          }
        }
      } catch (IOException e) {
        ready.completeExceptionally(e);
      }
      ready.completeExceptionally(new IOException("exited with status " + process.onExit().join().exitValue()));
    }, "sim-engines-" + name);
    reader.setDaemon(true);
    reader.start();
    return ready;
  }

  private static void awaitHealthy(HttpClient http, EnginesFile.Entry entry) throws IOException,
      InterruptedException {
    long deadline = System.nanoTime() + HEALTHY_WITHIN.toNanos();
    HttpRequest health = HttpRequest.newBuilder(URI.create(entry.baseUrl() + "/health"))
        .timeout(Duration.ofSeconds(2)).build();
    while (System.nanoTime() < deadline) {
      try {
        if (http.send(health, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not listening yet
      }
      Thread.sleep(100);
    }
    throw new IOException(entry.workerId() + " did not answer /health at " + entry.baseUrl());
  }

  private synchronized void stopAll() {
    stopping = true;
    for (Process process : processes) {
      process.destroy();
    }
    for (Process process : processes) {
      try {
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
    processes.clear();
  }

}
