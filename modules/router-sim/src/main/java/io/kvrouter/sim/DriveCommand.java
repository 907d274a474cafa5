package io.kvrouter.sim;

import io.kvrouter.sim.fleet.EnginesFile;
import io.kvrouter.sim.http.HttpDriver;
import io.kvrouter.sim.workload.Workload;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bin/sim drive}: a workload on wall-clock time against running engines (bin/sim engines), through an HTTP
 * endpoint (a router's front, a peer router's proxy) or, with {@code --target engines}, round robin over the engines
 * themselves; the hit rate from the engines' own counters (module README, "The wall-clock driver").
 */
@Command(name = "drive", mixinStandardHelpOptions = true,
    description = "Drives a workload over HTTP on wall-clock time; hit rate from the engines' vLLM counters.")
final class DriveCommand implements Callable<Integer> {
  @Option(names = "--engines-file", required = true, description = "the engines (bin/sim engines writes it)")
  Path enginesFile;

  @Option(names = "--target", required = true, paramLabel = "URL|engines",
      description = "an OpenAI-compatible endpoint (http://127.0.0.1:8080), or 'engines': round robin over them")
  String target;

  @Option(names = "--workload", required = true, description = "multi-turn | agent | mooncake | long-tail")
  String workload;

  @Option(names = "--sessions", description = "sessions (multi-turn, agent)")
  Integer sessions;

  @Option(names = "--rate", description = "new sessions per second (multi-turn, agent); long-tail: requests per "
      + "second between bursts")
  Double rate;

  @Option(names = "--requests", description = "long-tail: requests generated")
  Integer requests;

  @Option(names = "--trace", description = "Mooncake-format trace (default: the module's sample)")
  Path trace;

  @Option(names = "--limit", description = "only the first N trace entries")
  Integer limit;

  @Option(names = "--time-scale", description = "simulated time runs this many times faster than real time: the "
      + "engines' --time-scale, default ${DEFAULT-VALUE}")
  double timeScale = 1.0;

  @Option(names = "--seed", description = "default ${DEFAULT-VALUE}")
  long seed = 42;

  @Option(names = "--max-in-flight", description = "requests in flight at most, default ${DEFAULT-VALUE}")
  int maxInFlight = 256;

  @Option(names = "--timeout", description = "the run's wall-clock bound in seconds, default ${DEFAULT-VALUE}")
  long timeoutSeconds = 1800;

  @Option(names = "--out", description = "where <workload>-http.md goes (default target/sim-results)")
  Path out;

  @Override
  public Integer call() throws Exception {
    List<Map<String, Object>> engines = EnginesFile.read(enginesFile);
    List<URI> bases = new ArrayList<>();
    List<URI> metrics = new ArrayList<>();
    for (Map<String, Object> engine : engines) {
      String base = (String) engine.get("base_url");
      bases.add(URI.create(base));
      Object metricsUrl = engine.get("metrics_url");
      metrics.add(URI.create(metricsUrl instanceof String m ? m : base + "/metrics"));
    }
    URI endpoint = target.equals("engines") ? null : URI.create(target);
    if (endpoint != null && !"127".equals(endpoint.getHost().split("\\.")[0]) && !endpoint.getHost()
        .equals("localhost")) {
      throw new CommandLine.ParameterException(new CommandLine(this), "--target must be on 127.0.0.0/8");
    }
    String model = String.valueOf(engines.get(0).get("model"));
    Workload source = SimCli.workload(this, workload, sessions, rate, requests, trace, 1.0, limit, seed).get();
    System.err.println("workload: " + source.description());
    HttpDriver.Result r = new HttpDriver(new HttpDriver.Settings(endpoint, bases, metrics, model, timeScale,
        maxInFlight, Duration.ofSeconds(timeoutSeconds))).run(source);
    String table = table(r);
    String date = DateTimeFormatter.ISO_LOCAL_DATE_TIME.format(Instant.now().atOffset(ZoneOffset.UTC).withNano(0));
    String md = "# Wall-clock run: " + workload + "\n\n" + date + "Z, `modules/router-sim/bin/sim "
        + System.getProperty("sim.args", "drive ...").trim() + "`\n\n" + source.description() + "; "
        + engines.size() + " engine(s), time scale " + timeScale + "\n\n" + table;
    Path dir = out != null ? out : SimCli.home().resolve("target/sim-results");
    Files.createDirectories(dir);
    Files.writeString(dir.resolve(workload + "-http.md"), md);
    System.out.println(table);
    return r.failed() == 0 ? 0 : 1;
  }

  static String table(HttpDriver.Result r) {
    return String.format(Locale.ROOT, """
        | target | completed | failed | hit rate (engines' counters) | cached tokens reported to clients | TTFT p50 / p99 / mean (ms) | E2E mean (ms) | output tok/s | prompt tokens max/mean over engines |
        |---|---:|---:|---:|---:|---|---:|---:|---:|
        | %s | %d | %d | %.1f %% | %d of %d | %.0f / %.0f / %.0f | %.0f | %.0f | %.2f |
        """, r.target(), r.completed(), r.failed(), 100 * r.hitRate(), r.cachedTokensReported(),
        r.promptTokensSent(), percentile(r.ttftMicros(), 0.5) / 1000,
        percentile(r.ttftMicros(), 0.99) / 1000, mean(r.ttftMicros()) / 1000, mean(r.endToEndMicros()) / 1000,
        r.makespanMicros() == 0 ? 0 : r.outputTokens() * 1e6 / r.makespanMicros(), r.balance());
  }

  private static double mean(long[] values) {
    return Arrays.stream(values).average().orElse(0);
  }

  private static double percentile(long[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }
}
