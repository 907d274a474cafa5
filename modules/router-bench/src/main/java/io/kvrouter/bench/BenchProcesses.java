package io.kvrouter.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.kvrouter.bench.transport.ProcStat;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The child processes of a benchmark that runs real servers (the simulated engines, kvrouter nodes, peers): each
 * started from the repository root with its output in its own log file under a per-run directory, every one stopped
 * (with its descendants) by {@link #stopAll}, which a shutdown hook also runs on Ctrl-C or SIGTERM.
 */
final class BenchProcesses {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  /** One engine of the engines file {@code bin/sim engines} writes. */
  record Engine(String workerId, String baseUrl, String metricsUrl, String kvEvents, String kvEventsReplay) {}

  /** A kvrouter node started by {@link #kvrouter}: its process and ports. */
  record Node(Process process, int grpcPort, int httpPort, int managementPort) {}

  final Path root;
  final Path logs;
  private final List<Process> started = new ArrayList<>();
  private final Thread stopper = new Thread(this::stopAll, "bench-processes-stop");

  /** A run directory {@code modules/router-bench/target/<kind>/<time>} for the logs; the shutdown hook installed. */
  BenchProcesses(String kind) throws IOException {
    root = repositoryRoot();
    logs = root.resolve("modules/router-bench/target/" + kind + "/"
        + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    Files.createDirectories(logs);
    Runtime.getRuntime().addShutdownHook(stopper);
  }

  /** Stops everything and removes the shutdown hook (the end of a run). */
  void close() {
    stopAll();
    try {
      Runtime.getRuntime().removeShutdownHook(stopper);
    } catch (IllegalStateException shuttingDown) {
      // the hook is running or has run
    }
  }

  static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.exists(dir.resolve("bin/kvrouter"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException("run from inside the repository (bin/kvrouter not found)");
    }
    return dir;
  }

  Path log(String name) {
    return logs.resolve(name + ".log");
  }

  Process launch(String name, List<String> command, Map<String, String> env) throws IOException {
    ProcessBuilder builder = new ProcessBuilder(command).directory(root.toFile())
        .redirectErrorStream(true).redirectOutput(log(name).toFile());
    builder.environment().putAll(env);
    Process process = builder.start();
    synchronized (this) {
      started.add(process);
    }
    return process;
  }

  /** The process {@link #launch} started last. */
  synchronized Process lastStarted() {
    return started.get(started.size() - 1);
  }

  /** Stops one process this run started, and its children. */
  void stop(Process process) {
    process.descendants().forEach(ProcessHandle::destroy);
    process.destroy();
    try {
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
    synchronized (this) {
      started.remove(process);
    }
  }

  /** Stops every process this run started, and their children. */
  synchronized void stopAll() {
    for (Process process : started) {
      process.descendants().forEach(ProcessHandle::destroy);
      process.destroy();
    }
    for (Process process : started) {
      try {
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
    started.clear();
  }

  /**
   * {@code bin/sim engines} on free ports ({@code --base-port 0}), waited for until its engines file is written.
   *
   * @param extra more {@code bin/sim engines} options
   */
  List<Engine> startEngines(int count, double timeScale, int kvBlocks, String model, List<String> extra)
      throws Exception {
    Path file = logs.resolve("engines.yaml");
    List<String> command = new ArrayList<>(List.of(root.resolve("modules/router-sim/bin/sim").toString(), "engines",
        "--count", Integer.toString(count), "--base-port", "0", "--time-scale", Double.toString(timeScale),
        "--kv-blocks", Integer.toString(kvBlocks), "--model", model, "--engines-file", file.toString()));
    command.addAll(extra);
    Process process = launch("engines", command, Map.of());
    awaitCondition("the engines file", Duration.ofSeconds(240), () -> {
      if (!process.isAlive()) {
        throw new IllegalStateException("bin/sim engines exited: " + Files.readString(log("engines")));
      }
      return Files.exists(file);
    });
    List<Engine> engines = new ArrayList<>();
    Map<?, ?> parsed = YAML.readValue(file.toFile(), Map.class);
    for (Object entry : (List<?>) parsed.get("engines")) {
      Map<?, ?> e = (Map<?, ?>) entry;
      engines.add(new Engine((String) e.get("worker_id"), (String) e.get("base_url"), (String) e.get("metrics_url"),
          (String) e.get("kv_events"), (String) e.get("kv_events_replay")));
    }
    return engines;
  }

  /** The engines file {@code bin/sim engines} wrote. */
  Path enginesFile() {
    return logs.resolve("engines.yaml");
  }

  /**
   * {@code bin/kvrouter} on free ports with {@code env} added (e.g. {@code KVROUTER_MODELS}, {@code KVROUTER_ENGINES}),
   * waited for until it logs that it is up.
   */
  Node kvrouter(String name, Map<String, String> extra) throws Exception {
    return kvrouter(name, extra, root);
  }

  /** As above, from {@code checkout}'s {@code bin/kvrouter} (another checkout, built there: a before/after). */
  Node kvrouter(String name, Map<String, String> extra, Path checkout) throws Exception {
    int grpc = freePort();
    int http = freePort();
    int management = freePort();
    Map<String, String> env = new LinkedHashMap<>();
    env.put("KVROUTER_GRPC_PORT", Integer.toString(grpc));
    env.put("KVROUTER_MANAGEMENT_PORT", Integer.toString(management));
    env.put("KVROUTER_REMOTE_PORT", Integer.toString(freePort()));
    env.put("KVROUTER_HTTP_PORT", Integer.toString(http));
    env.put("KVROUTER_EPP_PORT", Integer.toString(freePort()));
    env.put("KVROUTER_EPP_HEALTH_PORT", Integer.toString(freePort()));
    env.put("KVROUTER_LOG_LEVEL", "WARN");
    env.put("KVROUTER_JAVA_OPTS", "-Xms512m -Xmx1g");
    env.putAll(extra);
    Process process = launch(name, List.of(checkout.resolve("bin/kvrouter").toString()), env);
    awaitCondition(name + " up", Duration.ofSeconds(240), () -> {
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited: " + Files.readString(log(name)));
      }
      return Files.readString(log(name)).contains("kvrouter is up");
    });
    return new Node(process, grpc, http, management);
  }

  interface Check {
    boolean ok() throws Exception;
  }

  static void awaitCondition(String what, Duration timeout, Check check) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!check.ok()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("timed out waiting for " + what);
      }
      Thread.sleep(200);
    }
  }

  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  /** CPU ticks of a process and its descendants (a peer's CLI may start its server as a child); 0 for none. */
  static long treeTicks(Process process) {
    if (process == null) {
      return 0;
    }
    List<Long> pids = new ArrayList<>();
    pids.add(process.pid());
    process.descendants().forEach(p -> pids.add(p.pid()));
    long sum = 0;
    for (long pid : pids) {
      try {
        sum += ProcStat.cpuTicks(pid);
      } catch (IllegalStateException gone) {
        // a child that ended
      }
    }
    return sum;
  }

  static String loadAverages() {
    try {
      String[] fields = Files.readString(Path.of("/proc/loadavg")).strip().split("\\s+");
      return fields[0] + " / " + fields[1] + " / " + fields[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }
}
