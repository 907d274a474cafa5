package io.kvrouter.sim;

import io.kvrouter.sim.driver.Comparison;
import io.kvrouter.sim.driver.FleetConfig;
import io.kvrouter.sim.driver.InProcessRouter;
import io.kvrouter.sim.driver.Overload;
import io.kvrouter.sim.driver.Pacer;
import io.kvrouter.sim.driver.RouterClients;
import io.kvrouter.sim.driver.RunResult;
import io.kvrouter.sim.driver.Simulation;
import io.kvrouter.sim.fleet.EngineCommand;
import io.kvrouter.sim.fleet.EnginesCommand;
import io.kvrouter.sim.report.OverloadReport;
import io.kvrouter.sim.report.Report;
import io.kvrouter.sim.report.SvgChart;
import io.kvrouter.sim.workload.LongTailTraceGenerator;
import io.kvrouter.sim.workload.MooncakeSampleGenerator;
import io.kvrouter.sim.workload.MooncakeTrace;
import io.kvrouter.sim.workload.OverloadWorkload;
import io.kvrouter.sim.workload.SessionWorkload;
import io.kvrouter.sim.workload.TraceWorkload;
import io.kvrouter.sim.workload.Workload;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code bin/sim}: the routing-quality benchmark on a simulated fleet (module README). */
@Command(name = "sim", mixinStandardHelpOptions = true, version = "router-sim 0.1.0",
    description = "Simulated inference fleet driven through the kvrouter: routing quality per policy.",
    subcommands = {SimCli.Demo.class, SimCli.Compare.class, SimCli.OverloadCommand.class, SimCli.GenerateTrace.class,
        EngineCommand.class,
        EnginesCommand.class, DriveCommand.class, CommandLine.HelpCommand.class})
public final class SimCli implements Runnable {
  /** Where bin/sim's module lives (set by the launcher), for default paths. */
  static Path home() {
    return Path.of(System.getProperty("sim.home", "."));
  }

  @Override
  public void run() {
    new CommandLine(this).usage(System.err);
  }

  public static void main(String[] args) {
    int code = new CommandLine(new SimCli()).execute(args);
    System.exit(code);
  }

  /** Options every comparison takes. */
  static final class RunOptions {
    @Option(names = "--engines", description = "simulated engines (workers), default ${DEFAULT-VALUE}")
    int engines = 8;

    @Option(names = "--ranks", description = "data-parallel ranks per engine, default ${DEFAULT-VALUE}")
    int ranks = 1;

    @Option(names = "--kv-blocks", description = "KV blocks per rank, default ${DEFAULT-VALUE}")
    int kvBlocks = FleetConfig.DEFAULT_KV_BLOCKS;

    @Option(names = "--block-size", description = "tokens per KV block, default ${DEFAULT-VALUE}")
    int blockSize = FleetConfig.DEFAULT_BLOCK_SIZE;

    @Option(names = "--seed", description = "workload and picker seed, default ${DEFAULT-VALUE}")
    long seed = 42;

    @Option(names = "--router", paramLabel = "HOST:PORT",
        description = "drive a running router on wall-clock time instead of an in-process one on virtual time")
    String router;

    @Option(names = "--policies", split = ",", paramLabel = "LABEL",
        description = "only these rows: round_robin, random, least_in_flight, power_of_two, kv, kv-approx, greedy")
    List<String> policies;

    @Option(names = "--kv-param", paramLabel = "KEY=VALUE",
        description = "a kv policy parameter (Admin.SetPolicy), repeatable")
    Map<String, String> kvParameters = new LinkedHashMap<>();

    @Option(names = "--extra-kv", paramLabel = "KEY=VALUE[,KEY=VALUE]",
        description = "one more kv row with these policy parameters, repeatable")
    List<String> extraKv = new ArrayList<>();

    @Option(names = "--session-rows", description = "add rows whose Books name their conversation (session "
        + "affinity): kv soft, kv hard, round_robin hard; the report adds the session-affinity hit rate")
    boolean sessionRows;

    @Option(names = "--out", paramLabel = "DIR", description = "where the .md and .svg go (default target/sim-results)")
    Path out;

    FleetConfig fleet() {
      return FleetConfig.of(engines, ranks, kvBlocks, blockSize);
    }

    List<Comparison.Contender> contenders() {
      List<Comparison.Contender> all = Comparison.contenders();
      List<Comparison.Contender> chosen = new ArrayList<>();
      if (policies == null || policies.isEmpty()) {
        chosen.addAll(all);
      }
      for (String name : policies == null ? List.<String>of() : policies) {
        chosen.add(all.stream().filter(c -> shortName(c).equals(name)).findFirst().orElseThrow(() ->
            new CommandLine.ParameterException(new CommandLine(new SimCli()), "unknown policy row '" + name + "'")));
      }
      for (String extra : extraKv) {
        Map<String, String> parameters = new LinkedHashMap<>();
        for (String pair : extra.split(",")) {
          String[] kv = pair.split("=", 2);
          if (kv.length != 2) {
            throw new CommandLine.ParameterException(new CommandLine(new SimCli()),
                "--extra-kv wants KEY=VALUE pairs, got '" + extra + "'");
          }
          parameters.put(kv[0].trim(), kv[1].trim());
        }
        int greedy = chosen.indexOf(Comparison.PREFIX_GREEDY);
        chosen.add(greedy < 0 ? chosen.size() : greedy, Comparison.Contender.kvWith(parameters));
      }
      if (sessionRows) {
        for (Comparison.Contender row : List.of(Comparison.Contender.withSessions("kv", "soft"),
            Comparison.Contender.withSessions("kv", "hard"), Comparison.Contender.withSessions("round_robin", "hard"))) {
          int greedy = chosen.indexOf(Comparison.PREFIX_GREEDY);
          chosen.add(greedy < 0 ? chosen.size() : greedy, row);
        }
      }
      return chosen;
    }

    private static String shortName(Comparison.Contender c) {
      if (!c.usesRouter()) {
        return "greedy";
      }
      return c.publishEvents() ? c.policy() : c.policy() + "-approx";
    }
  }

  @Command(name = "demo", mixinStandardHelpOptions = true,
      description = "A small fleet (4 engines with 4,000 KV blocks each, so a short run fills their caches) and 40 "
          + "multi-turn sessions through an in-process router on virtual time: prints the comparison table.")
  static final class Demo implements Callable<Integer> {
    @Option(names = "--out", paramLabel = "DIR", description = "where the .md and .svg go (default target/sim-results)")
    Path out;

    @Override
    public Integer call() throws IOException {
      RunOptions options = new RunOptions();
      options.engines = 4;
      options.kvBlocks = 4_000;
      options.out = out;
      SessionWorkload.Params params = SessionWorkload.multiTurn(40, 1.0, options.seed);
      return compare(options, "demo-multi-turn", () -> new SessionWorkload(params), "bin/sim demo");
    }
  }

  @Command(name = "compare", mixinStandardHelpOptions = true,
      description = "Replays a workload once per policy, side by side, and writes a Markdown table and an SVG chart.")
  static final class Compare implements Callable<Integer> {
    @Mixin
    RunOptions options;

    @Option(names = "--workload", required = true, description = "multi-turn | agent | mooncake | long-tail")
    String workload;

    @Option(names = "--sessions", description = "sessions (multi-turn, agent), default 300 / 200")
    Integer sessions;

    @Option(names = "--rate", description = "new sessions per second (multi-turn, agent), default 1.5 / 1.0; "
        + "long-tail: requests per second between bursts, default " + LONG_TAIL_RATE)
    Double rate;

    @Option(names = "--requests", description = "long-tail: requests generated, default " + LONG_TAIL_REQUESTS)
    Integer requests;

    @Option(names = "--trace", paramLabel = "FILE",
        description = "Mooncake-format JSONL trace (default: the module's traces/mooncake-sample.jsonl)")
    Path trace;

    @Option(names = "--time-scale", description = "trace arrival times are multiplied by this, default 1")
    double timeScale = 1.0;

    @Option(names = "--limit", description = "replay only the first N trace entries")
    Integer limit;

    @Override
    public Integer call() throws IOException {
      Supplier<Workload> source = workload(this, workload, sessions, rate, requests, trace, timeScale, limit,
          options.seed);
      return compare(options, workload, source, "bin/sim compare --workload " + workload + " ...");
    }

  }

  private static <T> T orDefault(T value, T fallback) {
    return value != null ? value : fallback;
  }

  static final int LONG_TAIL_REQUESTS = 2000;
  static final double LONG_TAIL_RATE = 2.0;

  /**
   * A fresh workload per call: multi-turn, agent, a Mooncake-format trace (the module's sample by default), or the
   * long-tail trace generated from the seed.
   */
  static Supplier<Workload> workload(Object command, String name, Integer sessions, Double rate, Integer requests,
      Path trace, double traceTimeScale, Integer limit, long seed) throws IOException {
    switch (name) {
      case "multi-turn" -> {
        SessionWorkload.Params p = SessionWorkload.multiTurn(orDefault(sessions, 300), orDefault(rate, 1.5), seed);
        return () -> new SessionWorkload(p);
      }
      case "agent" -> {
        SessionWorkload.Params p = SessionWorkload.agent(orDefault(sessions, 200), orDefault(rate, 1.0), seed);
        return () -> new SessionWorkload(p);
      }
      case "mooncake" -> {
        Path file = trace != null ? trace : home().resolve("traces/mooncake-sample.jsonl");
        List<MooncakeTrace.Entry> entries = MooncakeTrace.read(file);
        if (limit != null && limit < entries.size()) {
          entries = entries.subList(0, limit);
        }
        List<MooncakeTrace.Entry> replayed = entries;
        return () -> new TraceWorkload(replayed, file.getFileName().toString(), traceTimeScale, seed);
      }
      case "long-tail" -> {
        int count = orDefault(requests, LONG_TAIL_REQUESTS);
        double base = orDefault(rate, LONG_TAIL_RATE);
        if (count <= 0 || !(base > 0)) {
          throw new CommandLine.ParameterException(new CommandLine(command),
              "long-tail wants --requests > 0 and --rate > 0");
        }
        List<MooncakeTrace.Entry> entries = new LongTailTraceGenerator(seed).generate(count, base);
        String source = String.format(Locale.ROOT, "long-tail (generated: %d requests, base rate %.3g/s)", count,
            base);
        return () -> new TraceWorkload(entries, source, traceTimeScale, seed);
      }
      default -> throw new CommandLine.ParameterException(new CommandLine(command),
          "unknown workload '" + name + "': multi-turn, agent, mooncake or long-tail");
    }
  }

  @Command(name = "overload", mixinStandardHelpOptions = true,
      description = "Arrivals above what the fleet serves, through an in-process router on virtual time, once per "
          + "admission setup (no queue, FCFS, WSPT, tenants as classes 3:1, strict tiers without and with aging): "
          + "TTFT mean and p99, per prompt size, tenant and tier, and each tenant's share; writes overload.md.")
  static final class OverloadCommand implements Callable<Integer> {
    @Option(names = "--engines", description = "simulated engines, default ${DEFAULT-VALUE}")
    int engines = 4;

    @Option(names = "--rate", description = "requests per second, default ${DEFAULT-VALUE}")
    double rate = 24;

    @Option(names = "--duration", description = "seconds of arrivals, default ${DEFAULT-VALUE}")
    double duration = 60;

    @Option(names = "--long-share", description = "share of long prompts, default ${DEFAULT-VALUE}")
    double longShare = 0.3;

    @Option(names = "--tier-one-share", description = "share of requests in strict tier 1, default ${DEFAULT-VALUE}")
    double tierOneShare = 0.2;

    @Option(names = "--aging-ms", description = "queue_aging_ms of the aging row, default ${DEFAULT-VALUE}")
    long agingMillis = 10_000;

    @Option(names = "--seed", description = "workload and picker seed, default ${DEFAULT-VALUE}")
    long seed = 42;

    @Option(names = "--rows", split = ",", paramLabel = "N",
        description = "only these rows, by number from 1 (default: all)")
    List<Integer> rows;

    @Option(names = "--out", paramLabel = "DIR", description = "where overload.md goes (default target/sim-results)")
    Path out;

    @Override
    public Integer call() throws IOException {
      String args = System.getProperty("sim.args", "");
      String command = args.isBlank() ? "bin/sim overload" : "modules/router-sim/bin/sim " + args.trim();
      FleetConfig fleet = FleetConfig.of(engines, 1, FleetConfig.DEFAULT_KV_BLOCKS, FleetConfig.DEFAULT_BLOCK_SIZE);
      OverloadWorkload.Params params = new OverloadWorkload.Params(rate, duration, longShare, tierOneShare, seed);
      List<Overload.Row> all = Overload.rows(agingMillis);
      List<Overload.Row> chosen = new ArrayList<>();
      for (int i = 0; i < all.size(); i++) {
        if (rows == null || rows.isEmpty() || rows.contains(i + 1)) {
          chosen.add(all.get(i));
        }
      }
      String workloadText = new OverloadWorkload(params).description();
      System.err.println("fleet: " + fleet.describe());
      System.err.println("workload: " + workloadText);
      Simulation.Progress progress = (label, completed, arrived, simMicros) -> System.err.printf(Locale.ROOT,
          "[%s] %d requests done, %d arrived, %.1f s simulated%n", label, completed, arrived, simMicros / 1e6);
      Pacer.Virtual clock = new Pacer.Virtual();
      List<RunResult> results;
      String mode;
      try (InProcessRouter router = InProcessRouter.start(clock)) {
        mode = clock.mode() + ", router on " + router.address();
        results = Overload.run(fleet, params, chosen, seed, router.clients(), clock, progress);
      }
      String date = DateTimeFormatter.ISO_LOCAL_DATE_TIME.format(Instant.now().atOffset(ZoneOffset.UTC)
          .withNano(0)) + "Z";
      Report.Context context = new Report.Context("Admission under overload", date, command, mode,
          fleet.describe(), workloadText);
      String markdown = OverloadReport.markdown(context, results, duration);
      Path dir = out != null ? out : home().resolve("target/sim-results");
      Files.createDirectories(dir);
      Path md = dir.resolve("overload.md");
      Files.writeString(md, markdown);
      System.out.println(markdown);
      System.err.println("wrote " + md);
      return 0;
    }
  }

  @Command(name = "generate-trace", mixinStandardHelpOptions = true,
      description = "Writes a synthetic trace in the Mooncake format (how traces/mooncake-sample.jsonl was made).")
  static final class GenerateTrace implements Callable<Integer> {
    @Option(names = "--out", required = true, paramLabel = "FILE")
    Path out;

    @Option(names = "--requests", description = "default ${DEFAULT-VALUE}")
    int requests = 2000;

    @Option(names = "--rate", description = "requests per second on average (sample, long-tail: default 6.0); new "
        + "sessions per second (multi-turn, agent)")
    Double rate;

    @Option(names = "--seed", description = "default ${DEFAULT-VALUE}")
    long seed = 7;

    @Option(names = "--kind", description = "sample (the shipped sample's mix, --rate its mean), long-tail "
        + "(--rate its calm rate), or multi-turn / agent (the session workloads as multi-turn traces: "
        + "session_id, the first turn's timestamp, later turns' delay after the previous one finished, each turn's "
        + "new tokens; --sessions, --rate new sessions per second, default 1.5 / 1.0, --block-tokens), "
        + "default ${DEFAULT-VALUE}")
    String kind = "sample";

    @Option(names = "--sessions", description = "multi-turn / agent: sessions, default 300 / 200")
    Integer sessions;

    @Option(names = "--block-tokens", description = "multi-turn / agent: tokens per hash id (replay with aiperf's "
        + "--isl-block-size of the same value), default ${DEFAULT-VALUE} (divides both shared prefixes' lengths)")
    int blockTokens = 100;

    @Option(names = "--session-seed", description = "multi-turn / agent: the workload's seed (as `compare --seed`), "
        + "default ${DEFAULT-VALUE}")
    long sessionSeed = 42;

    @Override
    public Integer call() throws IOException {
      if (kind.equals("multi-turn") || kind.equals("agent")) {
        boolean chat = kind.equals("multi-turn");
        SessionWorkload.Params p = chat
            ? SessionWorkload.multiTurn(sessions != null ? sessions : 300, rate != null ? rate : 1.5, sessionSeed)
            : SessionWorkload.agent(sessions != null ? sessions : 200, rate != null ? rate : 1.0, sessionSeed);
        List<SessionWorkload.TraceTurn> lines = new SessionWorkload(p).toTrace(blockTokens);
        try (Writer writer = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
          SessionWorkload.writeTrace(lines, writer);
        }
        System.err.println("wrote " + lines.size() + " turns of " + p.sessions() + " sessions to " + out);
        return 0;
      }
      List<MooncakeTrace.Entry> entries = switch (kind) {
        case "sample" -> new MooncakeSampleGenerator(seed).generate(requests, rate != null ? rate : 6.0);
        case "long-tail" -> new LongTailTraceGenerator(seed).generate(requests, rate != null ? rate : 6.0);
        default -> throw new CommandLine.ParameterException(new CommandLine(this),
            "unknown --kind '" + kind + "': sample, long-tail, multi-turn or agent");
      };
      try (Writer writer = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
        MooncakeTrace.write(entries, writer);
      }
      System.err.println("wrote " + entries.size() + " entries to " + out);
      return 0;
    }
  }

  /** Runs the comparison; {@code fallbackCommand} is reported when the launcher did not pass the command line. */
  static int compare(RunOptions options, String workloadName, Supplier<Workload> workload, String fallbackCommand)
      throws IOException {
    String args = System.getProperty("sim.args", "");
    String command = args.isBlank() ? fallbackCommand : "modules/router-sim/bin/sim " + args.trim();
    FleetConfig fleet = options.fleet();
    Comparison.Setup setup = new Comparison.Setup(workloadName, fleet, workload, options.seed,
        options.kvParameters);
    List<Comparison.Contender> contenders = options.contenders();
    Simulation.Progress progress = (label, completed, arrived, simMicros) -> System.err.printf(Locale.ROOT,
        "[%s] %d requests done, %d arrived, %.1f s simulated%n", label, completed, arrived, simMicros / 1e6);
    String workloadText = workload.get().description();
    System.err.println("fleet: " + fleet.describe());
    System.err.println("workload: " + workloadText);
    List<RunResult> results;
    String mode;
    if (contenders.stream().noneMatch(Comparison.Contender::usesRouter)) {
      mode = "simulator only (no router)";
      results = Comparison.run(setup, contenders, null, new Pacer.Virtual(), "", progress);
    } else if (options.router == null) {
      Pacer.Virtual clock = new Pacer.Virtual();
      System.err.println("starting an in-process router on virtual time ...");
      try (InProcessRouter router = InProcessRouter.start(clock)) {
        mode = clock.mode() + ", router on " + router.address();
        results = Comparison.run(setup, contenders, router.clients(), clock, "", progress);
      }
    } else {
      int colon = options.router.lastIndexOf(':');
      if (colon <= 0) {
        throw new CommandLine.ParameterException(new CommandLine(new SimCli()), "--router wants HOST:PORT");
      }
      String host = options.router.substring(0, colon).replace("[", "").replace("]", "");
      int port = Integer.parseInt(options.router.substring(colon + 1));
      Pacer.Wall wall = new Pacer.Wall();
      mode = wall.mode() + " at " + options.router;
      try (RouterClients clients = RouterClients.connect(host, port)) {
        results = Comparison.run(setup, contenders, clients, wall, Long.toString(System.currentTimeMillis(), 36),
            progress);
      }
    }
    String date = DateTimeFormatter.ISO_LOCAL_DATE_TIME.format(Instant.now().atOffset(ZoneOffset.UTC)
        .withNano(0)) + "Z";
    Report.Context context = new Report.Context("Routing quality: " + workloadName, date, command, mode,
        fleet.describe(), workloadText);
    String markdown = Report.markdown(context, results);
    Path dir = options.out != null ? options.out : home().resolve("target/sim-results");
    Files.createDirectories(dir);
    Path md = dir.resolve(workloadName + ".md");
    Path svg = dir.resolve(workloadName + ".svg");
    Files.writeString(md, markdown + "\n![chart](" + svg.getFileName() + ")\n");
    Files.writeString(svg, SvgChart.render("Routing quality: " + workloadName + " (" + fleet.engines()
        + " engines)", results));
    System.out.println(markdown);
    System.err.println("wrote " + md + " and " + svg);
    return 0;
  }
}
