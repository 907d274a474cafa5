package io.kvrouter.partitions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The router nodes of a run: one JVM per node, started by {@code bin/kvrouter} inside the node's namespace
 * ({@code ip netns exec kvp-nN}, which execs: the process is the JVM), bound to the node's address, configured
 * through the environment only. Each node's pid is written to {@code pids/node-N.pid} so that {@code bin/partitions}
 * can stop what this JVM started if it dies.
 */
public final class Nodes implements AutoCloseable {
  private static final Pattern UP = Pattern.compile("\"status\"\\s*:\\s*\"Up\"");
  private static final Pattern UNREACHABLE_BLOCK = Pattern.compile("\"unreachable\"\\s*:\\s*\\[([^\\]]*)\\]");

  private final Path repo;
  private final Path dir;
  private final Path pids;
  private final Log log;
  private final Map<Integer, String> regions;
  private final Map<String, String> env;
  private final Map<Integer, Process> processes = new HashMap<>();
  private final Map<Integer, Integer> starts = new HashMap<>();
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  /**
   * @param regions each node's region, by node (1-based, in the order of the seed list)
   * @param env the variables every node gets beyond its addresses (profile, lease, heap)
   */
  public Nodes(Path repo, Path dir, Path pids, Log log, Map<Integer, String> regions, Map<String, String> env) {
    this.repo = repo;
    this.dir = dir;
    this.pids = pids;
    this.log = log;
    this.regions = regions;
    this.env = env;
  }

  public List<Integer> all() {
    return new ArrayList<>(regions.keySet());
  }

  public String region(int node) {
    return regions.get(node);
  }

  public List<Integer> inRegion(String region) {
    return regions.entrySet().stream().filter(e -> e.getValue().equals(region)).map(Map.Entry::getKey).toList();
  }

  public List<String> regionNames() {
    return regions.values().stream().distinct().sorted().toList();
  }

  /**
   * Every node, in node order: the seed list every node gets. With only the first node as seed, a restarted first
   * node that cannot reach the others at once forms a cluster of its own (it is the only seed it knows), which then
   * never merges back; with every node listed, the restarted first seed joins whichever other seed answers.
   */
  private String seeds() {
    List<String> seeds = new ArrayList<>();
    for (int node : all()) {
      seeds.add(Net.ip(node) + ":" + Net.REMOTE_PORT);
    }
    return String.join(",", seeds);
  }

  public synchronized void start(int node) {
    Process running = processes.get(node);
    if (running != null && running.isAlive()) {
      return;
    }
    int start = starts.merge(node, 1, Integer::sum);
    Path logFile = dir.resolve("node-" + node + (start == 1 ? "" : "-" + start) + ".log");
    String ip = Net.ip(node);
    ProcessBuilder pb = new ProcessBuilder("ip", "netns", "exec", Net.namespace(node),
        repo.resolve("bin/kvrouter").toString());
    Map<String, String> e = pb.environment();
    e.putAll(env);
    e.put("KVROUTER_GRPC_HOST", ip);
    e.put("KVROUTER_GRPC_PORT", Integer.toString(Net.GRPC_PORT));
    e.put("KVROUTER_GRPC_ADVERTISED_ENDPOINT", ip + ":" + Net.GRPC_PORT);
    e.put("KVROUTER_MANAGEMENT_HOST", ip);
    e.put("KVROUTER_MANAGEMENT_PORT", Integer.toString(Net.MANAGEMENT_PORT));
    e.put("KVROUTER_REMOTE_HOST", ip);
    e.put("KVROUTER_REMOTE_PORT", Integer.toString(Net.REMOTE_PORT));
    e.put("KVROUTER_REGION", regions.get(node));
    e.put("KVROUTER_SEED_NODES", seeds());
    pb.redirectErrorStream(true).redirectOutput(logFile.toFile());
    try {
      Process p = pb.start();
      processes.put(node, p);
      Files.writeString(pids.resolve("node-" + node + ".pid"), Long.toString(p.pid()));
      log.info("node " + node + " (" + regions.get(node) + ", " + ip + ") started, pid " + p.pid() + ", log "
          + logFile.getFileName());
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }

  public synchronized boolean alive(int node) {
    Process p = processes.get(node);
    return p != null && p.isAlive();
  }

  /** SIGKILL: a crash. */
  public synchronized void kill(int node) {
    Process p = processes.get(node);
    if (p != null) {
      p.destroyForcibly();
      log.info("node " + node + " killed (SIGKILL)");
    }
  }

  /** Starts every node that is not running (a supervisor's restart of the nodes the resolver downed or a crash). */
  public List<Integer> restartExited() {
    List<Integer> restarted = new ArrayList<>();
    for (int node : all()) {
      if (!alive(node)) {
        Process p = processes.get(node);
        log.info("node " + node + " had exited" + (p == null ? "" : " (exit code " + p.exitValue() + ")")
            + ": restarting it");
        start(node);
        restarted.add(node);
      }
    }
    return restarted;
  }

  public List<Integer> exited() {
    return all().stream().filter(n -> !alive(n)).toList();
  }

  private String get(int node, String path) {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(
              URI.create("http://" + Net.ip(node) + ":" + Net.MANAGEMENT_PORT + path))
          .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 ? r.body() : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  public boolean ready(int node) {
    return get(node, "/ready") != null;
  }

  /** Members node sees Up, or -1 when it does not answer. */
  public int membersUp(int node) {
    String body = get(node, "/cluster/members");
    if (body == null) {
      return -1;
    }
    Matcher m = UP.matcher(body);
    int up = 0;
    while (m.find()) {
      up++;
    }
    Matcher u = UNREACHABLE_BLOCK.matcher(body);
    if (u.find() && !u.group(1).isBlank()) {
      return -1; // someone is still unreachable: not converged
    }
    return up;
  }

  /** Waits until every node is ready and sees all nodes Up with nobody unreachable. */
  public void awaitConverged(Duration timeout) {
    int n = all().size();
    await("every node ready and seeing " + n + " members Up", timeout, () -> {
      for (int node : all()) {
        if (!ready(node) || membersUp(node) < n) {
          return false;
        }
      }
      return true;
    });
  }

  public void startAll(Duration timeout) {
    // node 1 first (it forms the cluster), then the rest together
    List<Integer> nodes = all();
    start(nodes.get(0));
    await("node " + nodes.get(0) + " ready", timeout, () -> ready(nodes.get(0)));
    for (int node : nodes.subList(1, nodes.size())) {
      start(node);
    }
    awaitConverged(timeout);
  }

  public void await(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("timed out after " + timeout.toSeconds() + " s waiting for " + what
            + " (node logs in " + dir + ")");
      }
      sleep(500);
    }
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** SIGTERM to every node (they leave and exit), SIGKILL to what is left after 20 s. */
  @Override
  public synchronized void close() {
    for (Process p : processes.values()) {
      if (p.isAlive()) {
        p.destroy();
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    for (Map.Entry<Integer, Process> e : processes.entrySet()) {
      try {
        long left = Math.max(0, deadline - System.nanoTime());
        if (!e.getValue().waitFor(left, TimeUnit.NANOSECONDS)) {
          e.getValue().destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException ex) {
        e.getValue().destroyForcibly();
        Thread.currentThread().interrupt();
      }
      try {
        Files.deleteIfExists(pids.resolve("node-" + e.getKey() + ".pid"));
      } catch (IOException ignored) {
        // the launcher's cleanup reads stale pid files harmlessly (it checks the process first)
      }
    }
    processes.clear();
  }
}
