package io.kvrouter.partitions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The harness's command line, run by {@code bin/partitions} inside the hub namespace once the namespaces exist.
 * Exit code 0 when every verdict is VALID, 1 when one is INVALID, 2 on a usage error, 3 when a run aborted.
 */
@Command(name = "partitions", mixinStandardHelpOptions = true, subcommands = {PartitionsCli.Run.class,
    PartitionsCli.All.class, PartitionsCli.Ci.class},
    description = "Partitions, slow links and split regions against router nodes in network namespaces, with a"
        + " Jepsen-style checker of the booking guarantees.")
public final class PartitionsCli {

  /**
   * The CI subset: scenarios the current code passes (the others find violations today, results/partitions.md), so
   * that CI guards them without failing on the known defect. Add minority-owner, one-way and failover-partition here
   * once ownership is made safe.
   */
  static final List<String> CI_SCENARIOS = List.of("majority-owner", "minority-owner", "region-cut");

  static class Common {
    @Option(names = "--clients-per-node", defaultValue = "8", description = "client loops per node (default 8)")
    int clientsPerNode;
    @Option(names = "--workers", defaultValue = "4", description = "one-rank workers per region (default 4)")
    int workers;
    @Option(names = "--seed", defaultValue = "1", description = "the clients' random seed")
    long seed;
    @Option(names = "--lull", defaultValue = "drain", description = "before the fault the clients pause their"
        + " Books for a moment and either drain (release what they hold: the fault meets an empty ledger; default)"
        + " or pause (keep their holds: the fault meets a ledger of live bookings, whose Releases it can undo)")
    String lull;
    @Option(names = "--repo", defaultValue = "${env:KVROUTER_PARTITIONS_REPO:-.}", description = "the repository")
    Path repo;

    Runner runner() {
      Path module = repo.resolve("modules/router-partitions/target");
      return new Runner(repo.toAbsolutePath(), module.resolve("runs").toAbsolutePath(),
          module.resolve("net/pids").toAbsolutePath(), clientsPerNode, workers, seed, lullDrains());
    }

    boolean lullDrains() {
      return switch (lull) {
        case "drain" -> true;
        case "pause" -> false;
        default -> throw new CommandLine.ParameterException(new CommandLine(this), "--lull: drain or pause");
      };
    }
  }

  @Command(name = "run", description = "Run one scenario and print its verdict.")
  static final class Run extends Common implements Callable<Integer> {
    @Option(names = "--scenario", required = true, description = "one of: ${COMPLETION-CANDIDATES}",
        completionCandidates = ScenarioIds.class)
    String scenario;
    @Option(names = "--profile", defaultValue = "loopback", description = "loopback (default) or production")
    String profile;

    @Override
    public Integer call() {
      Runner.Result r = runner().run(Scenario.of(scenario), Profile.of(profile));
      return r.verdict().valid() ? 0 : 1;
    }
  }

  @Command(name = "all", description = "Run every scenario with each profile (and --runs times) and print a table.")
  static final class All extends Common implements Callable<Integer> {
    @Option(names = "--profiles", split = ",", defaultValue = "loopback,production")
    List<String> profiles;
    @Option(names = "--scenarios", split = ",", description = "default: every scenario")
    List<String> scenarios;
    @Option(names = "--runs", defaultValue = "1", description = "runs of each (scenario, profile)")
    int runs;

    @Override
    public Integer call() {
      List<String> ids = scenarios == null ? Scenario.ids() : scenarios;
      return runAll(runner(), ids, profiles, runs, repo);
    }
  }

  @Command(name = "ci", description = "The CI subset with the loopback profile: majority-owner, region-cut.")
  static final class Ci extends Common implements Callable<Integer> {
    @Override
    public Integer call() {
      return runAll(runner(), CI_SCENARIOS, List.of("loopback"), 1, repo);
    }
  }

  static int runAll(Runner runner, List<String> ids, List<String> profiles, int runs, Path repo) {
    List<Runner.Result> results = new ArrayList<>();
    for (String profile : profiles) {
      for (String id : ids) {
        for (int i = 0; i < runs; i++) {
          results.add(runner.run(Scenario.of(id), Profile.of(profile)));
        }
      }
    }
    String table = table(results);
    System.out.println(table);
    String stamp = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").withZone(ZoneOffset.UTC).format(Instant.now());
    try {
      Path out = repo.resolve("modules/router-partitions/target/runs/summary-" + stamp + ".md");
      Files.createDirectories(out.getParent());
      Files.writeString(out, table);
      System.err.println("summary written to " + out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return results.stream().allMatch(r -> r.verdict().valid()) ? 0 : 1;
  }

  static String table(List<Runner.Result> results) {
    StringBuilder sb = new StringBuilder();
    sb.append("| scenario | profile | verdict | violations | took | fault side's new acks during the fault |"
        + " first new ack elsewhere after the fault | nodes exited | calls |\n");
    sb.append("|---|---|---|---|---|---|---|---|---|\n");
    for (Runner.Result r : results) {
      String sideAcks = r.timings().entrySet().stream().filter(e -> e.getKey().startsWith("new Books"))
          .map(e -> e.getValue()).findFirst().orElse("");
      String other = r.timings().entrySet().stream().filter(e -> e.getKey().startsWith("first new Book"))
          .map(e -> e.getValue()).findFirst().orElse("");
      sb.append("| ").append(r.scenario().id).append(" | ").append(r.profile().name()).append(" | ")
          .append(r.verdict().valid() ? "VALID" : "INVALID").append(" | ")
          .append(r.verdict().counts().isEmpty() ? "-" : r.verdict().counts().toString()).append(" | ")
          .append(r.took().toSeconds()).append(" s | ").append(sideAcks).append(" | ").append(other).append(" | ")
          .append(r.timings().getOrDefault("nodes exited during the fault", "-")).append(" | ")
          .append(r.verdict().summary().replaceAll(" calls .*", "")).append(" |\n");
    }
    return sb.toString();
  }

  static final class ScenarioIds extends ArrayList<String> {
    ScenarioIds() {
      super(Scenario.ids());
    }
  }

  public static void main(String[] args) {
    CommandLine cl = new CommandLine(new PartitionsCli());
    cl.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
      e.printStackTrace();
      return 3;
    });
    System.exit(cl.execute(args));
  }
}
