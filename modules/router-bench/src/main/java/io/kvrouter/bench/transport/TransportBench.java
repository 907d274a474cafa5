package io.kvrouter.bench.transport;

import io.kvrouter.bench.transport.Bodies.Body;
import io.kvrouter.bench.transport.NoopServer.Kind;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The transport bench: no-op gRPC servers, our router per binding, and Book+Release pairs, each server in its own
 * process and the load from a grpc-java driver in another; server CPU per call from /proc.
 */
@Command(name = "transport-bench", mixinStandardHelpOptions = true,
    description = "Server CPU per call and calls/s of no-op gRPC servers and kvrouter over gRPC (loopback only).")
public final class TransportBench implements Callable<Integer> {
  static final String NOOP = "noop";
  static final String ROUTER = "router";
  /** Side-by-side results: the router and the cheapest no-op server under alternating load. */
  static final String VERSUS_ROUTER = "versus-router";
  static final String VERSUS_NOOP = "versus-noop";

  @Option(names = "--rounds", defaultValue = "1",
      description = "measure every no-op server and router binding this many times, in turn, all kept running "
          + "(later rounds: the highest connection count only); the targets are judged side by side, see --slice-ms")
  int rounds;

  @Option(names = "--round-warmup-s", defaultValue = "10",
      description = "warm-up before each point of rounds after the first (a fresh driver JVM each time)")
  double roundWarmup;

  @Option(names = "--slice-ms", defaultValue = "1000",
      description = "side by side: the load alternates between the router and the cheapest no-op server in slices "
          + "this long")
  long sliceMs;

  @Option(names = "--quick", description = "1 s warm-ups and 2 s windows (a smoke run; written to --out only if given)")
  boolean quick;

  @Option(names = "--warmup-s", defaultValue = "15",
      description = "warm-up before the first point of each call kind (Select, Book+Release) on a server (C2 compiles on the server's own CPU: keep it long)")
  double warmupFirst;

  @Option(names = "--later-warmup-s", defaultValue = "2", description = "warm-up before each later point")
  double warmup;

  @Option(names = "--measure-s", defaultValue = "8", description = "measured window per point")
  double measure;

  @Option(names = "--connections", defaultValue = "1,64", split = ",")
  List<Integer> connections;

  @Option(names = "--outstanding", defaultValue = "8", description = "outstanding unary calls per connection")
  int outstanding;

  @Option(names = "--bodies", defaultValue = "tokens,hashes", split = ",")
  List<String> bodies;

  @Option(names = "--noop", defaultValue = "pekko-grpc,netty-default,netty-direct", split = ",",
      description = "no-op servers to measure")
  List<String> noopServers;

  @Option(names = "--bindings", defaultValue = "pekko,netty", split = ",",
      description = "kvrouter.grpc.binding values to measure; bindings the server refuses are reported and skipped")
  List<String> bindings;

  @Option(names = "--steps", defaultValue = "noop,router", split = ",",
      description = "noop (no-op servers), router (Select and Book+Release per binding)")
  List<String> steps;

  @Option(names = "--no-pairs", description = "skip the Book+Release pairs")
  boolean noPairs;

  @Option(names = "--no-kv-events", description = "register the fleet without publishing KV events")
  boolean noKvEvents;

  @Option(names = "--h2load", description = "also load every server with h2load (Select, highest connection count)")
  boolean h2load;

  @Option(names = "--h2load-streams", defaultValue = "8")
  int h2loadStreams;

  @Option(names = "--out", description = "where the tables go (default results/, or target/transport-quick/ with --quick)")
  Path out;

  @Option(names = "--wait-quiet-s", defaultValue = "30",
      description = "before each server, wait up to this long for other processes to use < --quiet-cores")
  double waitQuiet;

  @Option(names = "--quiet-cores", defaultValue = "0.3")
  double quietCores;

  @Option(names = "--jvm-flags", defaultValue = "-Xms512m -Xmx1g",
      description = "flags for every child JVM (servers and driver), besides the common-pool parallelism")
  String jvmFlags;

  private final List<Result> results = new ArrayList<>();
  private final List<H2Result> h2Results = new ArrayList<>();
  private final List<String> notes = new ArrayList<>();
  private Path logs;
  private long clockTicks;
  private int step;
  private int totalSteps;
  /** The round being measured (1-based). */
  private int round;

  /** One measured point from the grpc-java driver. */
  record Result(String group, String server, String label, String mode, Body body, int connections, double opsPerS,
      double p50, double p99, double mean, double serverUs, double clientUs, long ops, String outcomes,
      double otherCores, double jitUs, int round, String error) {
    boolean ok() {
      return error == null && ops > 0;
    }
  }

  /** One h2load run. */
  record H2Result(String server, String label, Body body, int connections, int streams, double reqPerS, long done,
      long succeeded, long failed, long status2xx, double serverUs, String meanLatency, String error) {}

  public static void main(String[] args) {
    System.exit(new CommandLine(new TransportBench()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    if (quick) {
      warmupFirst = 1;
      warmup = 1;
      measure = 2;
      if (out == null) {
        out = Path.of("target/transport-quick");
      }
    }
    if (out == null) {
      out = Path.of("results");
    }
    clockTicks = ProcStat.clockTicksPerSecond();
    String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    logs = Path.of("target/transport-logs", stamp);
    Files.createDirectories(logs);
    for (Body body : bodyList()) {
      Files.write(logs.resolve("body-" + body.key + ".bin"), Bodies.framed(Bodies.request(body)));
    }
    boolean h2 = h2load && h2loadAvailable();
    List<Runnable> plan = new ArrayList<>();
    List<Running> servers = new ArrayList<>();
    if (steps.contains(NOOP)) {
      for (String key : noopServers) {
        Kind kind = Kind.of(key);
        plan.add(() -> startNoop(kind).ifPresent(servers::add));
      }
    }
    if (steps.contains(ROUTER)) {
      for (String binding : bindings) {
        plan.add(() -> startRouter(binding).ifPresent(servers::add));
      }
    }
    if (steps.contains(NOOP) || steps.contains(ROUTER)) {
      int measuredRounds = quick ? 1 : Math.max(1, rounds);
      for (int r = 1; r <= measuredRounds; r++) {
        int thisRound = r;
        plan.add(() -> measureRound(servers, thisRound, h2 && thisRound == 1));
      }
      if (steps.contains(NOOP) && steps.contains(ROUTER)) {
        plan.add(() -> measureSideBySide(servers));
      }
      plan.add(() -> servers.forEach(Running::close));
    }
    totalSteps = plan.size();
    progress("plan: %d servers, %s connections x %d outstanding, windows %.0f s first warm-up / %.0f s warm-up / "
        + "%.0f s measure, CLK_TCK %d, logs in %s", plan.size(), connections, outstanding, warmupFirst, warmup,
        measure, clockTicks, logs);
    try {
      for (Runnable item : plan) {
        step++;
        waitQuiet();
        item.run();
      }
    } finally {
      servers.forEach(Running::close);
    }
    new TransportReport(this, results, h2Results, notes).write(out);
    progress("tables written to %s", out.toAbsolutePath().normalize());
    return 0;
  }

  /** Other engineers share this machine: wait (bounded) until the rest of it is nearly idle before a server. */
  private void waitQuiet() throws InterruptedException {
    long until = System.nanoTime() + Math.round(waitQuiet * 1e9);
    double busy;
    do {
      long before = ProcStat.machineBusyTicks();
      Thread.sleep(1000);
      busy = (ProcStat.machineBusyTicks() - before) / (double) clockTicks;
      if (busy < quietCores) {
        return;
      }
    } while (System.nanoTime() < until);
    progress("the machine stayed busy (%.2f cores used by other processes); measuring anyway", busy);
    notes.add(String.format(Locale.ROOT, "Other processes used %.2f cores when a server started (waited %.0f s); "
        + "see the 'other cores' column.", busy, waitQuiet));
  }

  List<Body> bodyList() {
    return bodies.stream().map(Body::of).toList();
  }

  String sliceLabel() {
    return sliceMs % 1000 == 0 ? (sliceMs / 1000) + " s" : sliceMs + " ms";
  }

  String measureLabel() {
    return String.format(Locale.ROOT, "%.0f s", measure);
  }

  List<Integer> connectionCounts() {
    return connections.stream().sorted().distinct().toList();
  }

  int maxConnections() {
    return connections.stream().mapToInt(Integer::intValue).max().orElse(1);
  }

  String windows() {
    return String.format(Locale.ROOT, "%.0f s warm-up before the first point of each call kind (Select, "
        + "Book+Release) on a server, %.0f s before each later one, %.0f s measured", warmupFirst, warmup, measure);
  }

  int outstanding() {
    return outstanding;
  }

  boolean isQuick() {
    return quick;
  }

  void progress(String format, Object... args) {
    System.out.printf(Locale.ROOT, "[transport %s] %s%n",
        LocalDateTime.now().format(DateTimeFormatter.ofPattern("HH:mm:ss")),
        (totalSteps > 0 ? "(" + step + "/" + totalSteps + ") " : "") + String.format(Locale.ROOT, format, args));
    System.out.flush();
  }

  private List<String> flags() {
    return List.of(jvmFlags.trim().split("\\s+"));
  }

  private List<String> selectPoints() {
    List<String> points = new ArrayList<>();
    for (Body body : bodyList()) {
      for (int c : connections) {
        points.add("select:" + body.key + ":" + c);
      }
    }
    return points;
  }

  private List<String> pairPoints() {
    List<String> points = new ArrayList<>();
    if (!noPairs) {
      Body body = bodyList().contains(Body.HASHES) ? Body.HASHES : bodyList().get(0);
      for (int c : connections) {
        points.add("pair:" + body.key + ":" + c);
      }
    }
    return points;
  }

  private static final Pattern PORT_LINE = Pattern.compile("^PORT (\\d+)");
  private static final Pattern MAIN_UP = Pattern.compile("kvrouter is up: gRPC [^:\\s]+:(\\d+)");
  private static final Pattern GRPC_BINDING = Pattern.compile("gRPC \\((\\S+) binding\\)");
  private static final Pattern NOTABLE = Pattern.compile("(?i)binding|ERROR|Exception");

  /** A server kept running through the rounds. */
  private record Running(String group, String key, String label, String binding, ServerProcess process, int port)
      implements AutoCloseable {
    @Override
    public void close() {
      process.close();
    }
  }

  private java.util.Optional<Running> startNoop(Kind kind) {
    progress("no-op server %s: starting", kind.label);
    ServerProcess server = null;
    try {
      server = ServerProcess.start(ServerProcess.javaCommand(NoopServer.class.getName(), flags(), List.of(kind.key)),
          Map.of(), PORT_LINE, NOTABLE, logs.resolve("noop-" + kind.key + ".log"));
      return java.util.Optional.of(new Running(NOOP, kind.key, kind.label, null, server, server.awaitPort(60)));
    } catch (Exception e) {
      if (server != null) {
        server.close();
      }
      fail(NOOP, kind.key, kind.label, e);
      return java.util.Optional.empty();
    }
  }

  private java.util.Optional<Running> startRouter(String binding) {
    String key = "router-" + binding;
    String label = "kvrouter, binding `" + binding + "`";
    progress("router, binding %s: starting", binding);
    ServerProcess server = null;
    try {
      server = ServerProcess.start(ServerProcess.javaCommand("io.kvrouter.server.Main", flags(), List.of()),
          routerEnv(binding), MAIN_UP, NOTABLE, logs.resolve(key + ".log")).killOnClose();
      int port = server.awaitPort(90);
      String setup = RouterSetup.run(port, !noKvEvents);
      progress("router, binding %s: pid %d port %d; %s", binding, server.pid(), port, setup);
      notes.add("Router setup: " + setup + ".");
      String reported = server.notableLines().stream().map(GRPC_BINDING::matcher)
          .filter(java.util.regex.Matcher::find).map(m -> m.group(1)).findFirst().orElse(null);
      if (reported != null && !reported.equals(binding)) {
        notes.add("Binding `" + binding + "`: the server logged \"gRPC (" + reported + " binding)\" — **not the "
            + "binding requested**.");
      }
      return java.util.Optional.of(new Running(ROUTER, key, label, binding, server, port));
    } catch (Exception e) {
      if (server != null) {
        server.close();
      }
      fail(ROUTER, key, label, e);
      notes.add("Binding `" + binding + "` was not measured: " + oneLine(e) + ".");
      return java.util.Optional.empty();
    }
  }

  /**
   * One round: every running server in turn, each with all its points. Round 1 warms each call kind up for
   * {@code --warmup-s}; later rounds, whose servers are already compiled, for {@code --round-warmup-s}.
   */
  private void measureRound(List<Running> servers, int thisRound, boolean h2) {
    round = thisRound;
    double savedFirst = warmupFirst;
    double savedLater = warmup;
    if (thisRound > 1) {
      warmupFirst = roundWarmup;
      warmup = Math.min(warmup, roundWarmup);
    }
    try {
      for (Running server : new ArrayList<>(servers)) {
        if (thisRound > 1 && server.group().equals(NOOP) && !cheapestInRoundOne(server.key())) {
          continue; // later rounds re-measure only the no-op servers the targets compare with
        }
        if (!server.process().alive()) {
          notes.add("`" + server.key() + "` was not running in round " + thisRound + "; see " + logs);
          continue;
        }
        progress("round %d: %s", thisRound, server.label());
        try {
          List<String> points = new ArrayList<>(selectPoints());
          points.addAll(pairPoints());
          if (thisRound > 1) {
            // the targets are at the highest connection count; other points are measured once
            String highest = ":" + maxConnections();
            points.removeIf(point -> !point.endsWith(highest));
          }
          String probeServer = drive(server.group(), server.key(), server.label(), server.port(), server.process(),
              points, server.binding());
          if (probeServer == null && server.binding() != null) {
            servers.remove(server);
            server.close();
            continue;
          }
          if (thisRound == 1 && server.binding() != null) {
            notes.add("Binding `" + server.binding() + "`: HTTP `server` header seen by the probe: `" + probeServer
                + "`.");
          }
          if (h2) {
            runH2load(server.key(), server.binding() == null ? server.label()
                : "kvrouter `" + server.binding() + "`", server.port(), server.process());
          }
        } catch (Exception e) {
          fail(server.group(), server.key(), server.label(), e);
        }
      }
    } finally {
      warmupFirst = savedFirst;
      warmup = savedLater;
      round = 0;
    }
  }

  /**
   * The targets' comparison, side by side: for each router binding and each point at the highest connection count,
   * one driver alternates 1 s slices of load between the router and the no-op server that was cheapest for that
   * point in round 1 ({@code --slice-ms}), so both are measured on the same host minute after minute.
   */
  private void measureSideBySide(List<Running> servers) {
    int conns = maxConnections();
    Map<String, Result> cheapest = new LinkedHashMap<>();
    for (Result r : results) {
      if (r.group().equals(NOOP) && r.round() == 1 && r.ok() && r.connections() == conns) {
        cheapest.merge(r.mode() + ":" + r.body().key, r, (a, b) -> a.serverUs() <= b.serverUs() ? a : b);
      }
    }
    for (Running router : servers) {
      if (!router.group().equals(ROUTER) || !router.process().alive()) {
        continue;
      }
      for (Map.Entry<String, Result> point : cheapest.entrySet()) {
        Running noop = servers.stream().filter(x -> x.group().equals(NOOP) && x.key().equals(point.getValue().server()))
            .findFirst().orElse(null);
        if (noop == null || !noop.process().alive()) {
          continue;
        }
        String spec = point.getKey() + ":" + conns;
        progress("side by side: %s vs %s, %s", router.label(), noop.label(), spec);
        try {
          driveVersus(router, noop, spec);
        } catch (Exception e) {
          fail(VERSUS_ROUTER, router.key(), router.label(), e);
        }
      }
    }
  }

  /** A load driver JVM over {@code args}, its stderr in {@code log}. */
  private Process startDriver(List<String> args, Path log) throws IOException {
    return new ProcessBuilder(ServerProcess.javaCommand(LoadDriver.class.getName(), flags(), args))
        .redirectError(log.toFile()).start();
  }

  private static BufferedReader output(Process driver) {
    return new BufferedReader(new InputStreamReader(driver.getInputStream(), StandardCharsets.UTF_8));
  }

  private void driveVersus(Running router, Running noop, String point) throws IOException, InterruptedException {
    List<String> args = List.of("--port", Integer.toString(router.port()), "--server-pid",
        Long.toString(router.process().pid()), "--versus-port", Integer.toString(noop.port()), "--versus-pid",
        Long.toString(noop.process().pid()), "--points", point, "--outstanding", Integer.toString(outstanding),
        "--slice-ms", Long.toString(sliceMs), "--warmup-first-ms", Long.toString(Math.round(roundWarmup * 1000)),
        "--measure-ms", Long.toString(Math.round(measure * 1000)), "--clk-tck", Long.toString(clockTicks));
    Path log = logs.resolve("driver-versus-" + router.key() + "-" + noop.key() + ".log");
    Process driver = startDriver(args, log);
    List<String> lines = new ArrayList<>();
    try (BufferedReader in = output(driver)) {
      String line;
      while ((line = in.readLine()) != null) {
        lines.add(line);
        if (line.startsWith("PROBE-FAILED")) {
          progress("side by side: PROBE FAILED: %s", line);
        } else if (line.startsWith("RESULT")) {
          Map<String, String> kv = parse(line);
          boolean routerSide = "a".equals(kv.get("side"));
          Result result = routerSide ? toResult(VERSUS_ROUTER, router.key(), router.label(), kv)
              : toResult(VERSUS_NOOP, noop.key(), noop.label(), kv);
          results.add(result);
          progress("side by side %s %s: %s", result.label(), point, result.ok()
              ? String.format(Locale.ROOT, "%.1f us CPU per %s (JIT %.1f), %,.0f %s/s while loaded",
                  result.serverUs(), unit(result.mode()), result.jitUs(), result.opsPerS(), unit(result.mode()))
              : "FAILED " + result.error());
        }
      }
    }
    if (!driver.waitFor(Math.round(roundWarmup + 2 * measure + 120), TimeUnit.SECONDS)) {
      driver.destroyForcibly();
    }
    Files.write(logs.resolve("driver-versus-" + router.key() + "-" + noop.key() + ".out"), lines,
        java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
  }

  /** Whether a no-op server was the cheapest for some call kind and body at the highest connection count. */
  private boolean cheapestInRoundOne(String key) {
    int conns = maxConnections();
    Map<String, Result> cheapest = new LinkedHashMap<>();
    for (Result r : results) {
      if (r.group().equals(NOOP) && r.round() == 1 && r.ok() && r.connections() == conns) {
        cheapest.merge(r.mode() + ":" + r.body().key, r, (a, b) -> a.serverUs() <= b.serverUs() ? a : b);
      }
    }
    return cheapest.values().stream().anyMatch(r -> r.server().equals(key));
  }

  private Map<String, String> routerEnv(String binding) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("KVROUTER_GRPC_BINDING", binding);
    env.put("KVROUTER_GRPC_HOST", "127.0.0.1");
    env.put("KVROUTER_GRPC_PORT", "0");
    env.put("KVROUTER_MANAGEMENT_HOST", "127.0.0.1");
    env.put("KVROUTER_MANAGEMENT_PORT", "0");
    env.put("KVROUTER_HTTP_PORT", "0");
    env.put("KVROUTER_EPP_PORT", "0");
    env.put("KVROUTER_EPP_HEALTH_PORT", "0");
    env.put("KVROUTER_REMOTE_HOST", "127.0.0.1");
    env.put("KVROUTER_REMOTE_PORT", "0");
    return env;
  }

  private String drive(String group, String key, String label, int port, ServerProcess server, List<String> points)
      throws IOException, InterruptedException {
    return drive(group, key, label, port, server, points, null);
  }

  /** Runs the load driver process over {@code points}; returns the server header the probe saw, null on failure. */
  private String drive(String group, String key, String label, int port, ServerProcess server, List<String> points,
      String binding) throws IOException, InterruptedException {
    List<String> args = List.of("--port", Integer.toString(port), "--server-pid", Long.toString(server.pid()),
        "--points", String.join(",", points), "--outstanding", Integer.toString(outstanding),
        "--warmup-first-ms", Long.toString(Math.round(warmupFirst * 1000)),
        "--warmup-ms", Long.toString(Math.round(warmup * 1000)),
        "--measure-ms", Long.toString(Math.round(measure * 1000)),
        "--clk-tck", Long.toString(clockTicks));
    Path log = logs.resolve("driver-" + key + ".log");
    Process driver = startDriver(args, log);
    long kinds = points.stream().map(p -> p.substring(0, p.indexOf(':'))).distinct().count();
    long budgetS = Math.round(kinds * warmupFirst + points.size() * (warmup + measure + 15) + 60);
    Thread watchdog = new Thread(() -> {
      try {
        if (!driver.waitFor(budgetS, TimeUnit.SECONDS)) {
          driver.destroyForcibly();
        }
      } catch (InterruptedException ignored) {
        driver.destroyForcibly();
      }
    }, "driver-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
    String probeServer = null;
    boolean probeFailed = false;
    List<String> lines = new ArrayList<>();
    try (BufferedReader in = output(driver)) {
      String line;
      while ((line = in.readLine()) != null) {
        lines.add(line);
        if (line.startsWith("PROBE-OK")) {
          Map<String, String> kv = parse(line);
          probeServer = kv.getOrDefault("server", "-");
          if (binding != null && "netty".equals(binding) && probeServer.startsWith("pekko-http")) {
            progress("%s: probe answered by %s, not grpc-java: binding not applied; stopping this server",
                label, probeServer);
            notes.add("Binding `netty` was requested but the answer came from `" + probeServer
                + "`: the server does not apply `kvrouter.grpc.binding` yet; not measured.");
            driver.destroyForcibly();
            return null;
          }
          progress("%s: probe OK (%s)", label, line.substring("PROBE-OK ".length()));
        } else if (line.startsWith("PROBE-FAILED")) {
          probeFailed = true;
          progress("%s: PROBE FAILED: %s", label, line);
          results.add(new Result(group, key, label, "probe", null, 0, 0, 0, 0, 0, 0, 0, 0, "-", 0, 0, round, line));
        } else if (line.startsWith("RESULT")) {
          Result result = toResult(group, key, label, parse(line));
          results.add(result);
          progress("%s %s:%s:%d: %s", label, result.mode(), result.body().key, result.connections(),
              result.ok() ? String.format(Locale.ROOT, "%,.0f %s/s, p50 %.0f us, p99 %.0f us, server %.1f us CPU "
                  + "per %s (client %.1f us, other processes %.2f cores), %s", result.opsPerS(),
                  unit(result.mode()), result.p50(), result.p99(), result.serverUs(), unit(result.mode()),
                  result.clientUs(), result.otherCores(), result.outcomes())
                  : "FAILED " + result.error());
        }
      }
    }
    driver.waitFor(10, TimeUnit.SECONDS);
    Files.write(logs.resolve("driver-" + key + ".out"), lines);
    if (!server.alive()) {
      notes.add("`" + key + "` exited during the run; see " + logs);
    }
    if (probeFailed) {
      return null;
    }
    return probeServer == null ? "-" : probeServer;
  }

  static String unit(String mode) {
    return "pair".equals(mode) ? "pair" : "call";
  }

  private Result toResult(String group, String key, String label, Map<String, String> kv) {
    String[] point = kv.get("point").split(":");
    Body body = Body.of(point[1]);
    int conns = Integer.parseInt(point[2]);
    if (kv.containsKey("error")) {
      return new Result(group, key, label, point[0], body, conns, 0, 0, 0, 0, 0, 0, 0, "-", 0, 0, round,
          kv.get("error"));
    }
    return new Result(group, key, label, point[0], body, conns, d(kv, "ops_per_s"), d(kv, "p50_us"),
        d(kv, "p99_us"), d(kv, "mean_us"), d(kv, "server_us_per_op"), d(kv, "client_us_per_op"),
        Long.parseLong(kv.get("ops")), kv.getOrDefault("outcomes", "-"), d(kv, "other_cores"),
        kv.containsKey("server_jit_us_per_op") ? d(kv, "server_jit_us_per_op") : Double.NaN, round, null);
  }

  private static double d(Map<String, String> kv, String key) {
    return Double.parseDouble(kv.get(key));
  }

  static Map<String, String> parse(String line) {
    Map<String, String> kv = new LinkedHashMap<>();
    for (String token : line.split(" ")) {
      int eq = token.indexOf('=');
      if (eq > 0) {
        kv.put(token.substring(0, eq), token.substring(eq + 1));
      }
    }
    return kv;
  }

  private void fail(String group, String key, String label, Exception e) {
    progress("%s: FAILED: %s", label, oneLine(e));
    results.add(new Result(group, key, label, "start", null, 0, 0, 0, 0, 0, 0, 0, 0, "-", 0, 0, round, oneLine(e)));
  }

  static String oneLine(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String text = root == e ? String.valueOf(e.getMessage()) : e.getMessage() + " (" + root + ")";
    return text.replace('\n', ' ');
  }

  // ---- h2load: an extra column, never the only check (it sees HTTP status only, not grpc-status) ----

  private boolean h2loadAvailable() {
    try {
      Process p = new ProcessBuilder("h2load", "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException | InterruptedException e) {
      notes.add("h2load was requested but is not installed (Debian: `apt-get install -y nghttp2-client`).");
      return false;
    }
  }

  private void runH2load(String key, String label, int port, ServerProcess server)
      throws IOException, InterruptedException {
    int conns = maxConnections();
    for (Body body : bodyList()) {
      Path file = logs.resolve("body-" + body.key + ".bin");
      // a separate warm-up run, then the measured one with the server's CPU read around it
      h2loadOnce(port, conns, file, Math.max(1, Math.round(warmup)));
      long before = ProcStat.cpuTicks(server.pid());
      String output = h2loadOnce(port, conns, file, Math.max(1, Math.round(measure)));
      long after = ProcStat.cpuTicks(server.pid());
      Files.writeString(logs.resolve("h2load-" + key + "-" + body.key + ".out"), output);
      H2Result result = parseH2load(key, label, body, conns, output, (after - before) * 1e6 / clockTicks);
      h2Results.add(result);
      progress("%s h2load %s %dx%d: %s", label, body.key, conns, h2loadStreams, result.error() != null
          ? "FAILED " + result.error()
          : String.format(Locale.ROOT, "%,.0f req/s, %d 2xx of %d done, %d failed, server %.1f us CPU per request",
              result.reqPerS(), result.status2xx(), result.done(), result.failed(), result.serverUs()));
    }
  }

  private String h2loadOnce(int port, int conns, Path body, long seconds) throws IOException, InterruptedException {
    List<String> command = List.of("h2load", "-c", Integer.toString(conns), "-m", Integer.toString(h2loadStreams),
        "-t", "1", "-D", Long.toString(seconds), "-d", body.toString(),
        "-H", "content-type: application/grpc", "-H", "te: trailers",
        "http://127.0.0.1:" + port + "/kvrouter.v1.Router/Select");
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    byte[] output = process.getInputStream().readAllBytes();
    if (!process.waitFor(seconds + 30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
    return new String(output, StandardCharsets.UTF_8);
  }

  private static final Pattern H2_FINISHED = Pattern.compile("finished in ([\\d.]+)s, ([\\d.]+) req/s");
  private static final Pattern H2_REQUESTS = Pattern.compile(
      "requests: (\\d+) total, (\\d+) started, (\\d+) done, (\\d+) succeeded, (\\d+) failed");
  private static final Pattern H2_STATUS = Pattern.compile("status codes: (\\d+) 2xx");
  private static final Pattern H2_TIME = Pattern.compile("time for request:\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)");

  private H2Result parseH2load(String key, String label, Body body, int conns, String output, double serverMicros) {
    var finished = H2_FINISHED.matcher(output);
    var requests = H2_REQUESTS.matcher(output);
    var status = H2_STATUS.matcher(output);
    var time = H2_TIME.matcher(output);
    if (!finished.find() || !requests.find() || !status.find()) {
      String tail = output.strip();
      tail = tail.substring(Math.max(0, tail.length() - 200)).replace('\n', ' ');
      return new H2Result(key, label, body, conns, h2loadStreams, 0, 0, 0, 0, 0, 0, "-", tail);
    }
    long done = Long.parseLong(requests.group(3));
    return new H2Result(key, label, body, conns, h2loadStreams, Double.parseDouble(finished.group(2)), done,
        Long.parseLong(requests.group(4)), Long.parseLong(requests.group(5)), Long.parseLong(status.group(1)),
        done == 0 ? Double.NaN : serverMicros / done, time.find() ? time.group(3) : "-", null);
  }
}
