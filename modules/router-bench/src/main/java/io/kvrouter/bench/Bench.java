package io.kvrouter.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * kvrouter's benchmarks, one subcommand each; {@code all} runs every one in this JVM. Each writes its tables as
 * Markdown under the results directory and prints progress lines on stderr.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
    description = "kvrouter benchmarks: each writes Markdown tables under the results directory.")
public final class Bench implements Runnable {
  static final String RESULTS_PROPERTY = "kvrouter.bench.results";

  /** Runs one benchmark and returns the files it wrote. */
  @FunctionalInterface
  interface Runs {
    List<Path> run(Path out, boolean quick) throws Exception;
  }

  /** One subcommand: its name, its description, what it runs. */
  private record Benchmark(String name, String description, Runs runs) {}

  /** In the order {@code all} runs them. */
  private static final List<Benchmark> BENCHMARKS = List.of(
      new Benchmark("advisory", "Advisory Select: actor vs inline at 1/16/256 callers on 4 threads.",
          AdvisoryBench::run),
      new Benchmark("admission", "Books/s through the admission actor vs a trivial sharded ask, with mailbox depth.",
          AdmissionBench::run),
      new Benchmark("growth", "JMH: inline Select ns/op and bytes/op vs worker count and request length.",
          SelectBenchmark::run),
      new Benchmark("picker", "JMH: locked vs lock-free picker slots at 1, 2 and 4 threads.",
          PickerLockBenchmark::run),
      new Benchmark("terms", "JMH: what each kv cost term adds to a Select (scorer alone and whole Select).",
          KvTermsBenchmark::run),
      new Benchmark("metrics", "JMH: inline Select with and without the Select timer, at 1 and 2 threads.",
          MetricsBenchmark::run),
      new Benchmark("explain", "JMH: inline Select with and without recording its decision (explain), at 1 and 2 "
          + "threads.", ExplainBenchmark::run),
      new Benchmark("kvindex", "KV index: events/s and lookup latency with readers and a writer (JMH), heap per "
          + "entry.", KvIndexBench::run),
      new Benchmark("active-prefix", "JMH: the active-prefix index's work for a Book and its Release, and a "
          + "Select's probes of every rank.", ActivePrefixBenchmark::run));

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    // 2 cores give the common pool parallelism 1, and then every async stage starts a thread (docs/architecture.md,
    // "Measured pitfalls")
    if (System.getProperty("java.util.concurrent.ForkJoinPool.common.parallelism") == null) {
      System.setProperty("java.util.concurrent.ForkJoinPool.common.parallelism", "4");
    }
    System.exit(run(args));
  }

  /** Runs the command line in this JVM and returns its exit code (the tests call this). */
  public static int run(String... args) {
    Report.command = "bin/bench " + String.join(" ", args);
    CommandLine cli = new CommandLine(new Bench());
    for (Benchmark b : BENCHMARKS) {
      cli.addSubcommand(b.name(), subcommand(b.description(), List.of(b)));
    }
    cli.addSubcommand("all", subcommand("Every benchmark above, in this JVM.", BENCHMARKS));
    // not in `all`: what the other benchmarks leave on the heap would blur its readings
    cli.addSubcommand("memory", subcommand("Heap after GC and admission entities before and after calls on "
        + "distinct unknown models and register/deregister cycles (run alone, in its own JVM).",
        List.of(new Benchmark("memory", "", MemoryBench::run))));
    // not in `all`: six router nodes in this JVM, and a failover that takes its own time
    cli.addSubcommand("cluster", subcommand("One region of three nodes in this JVM: view propagation, Books through a "
        + "non-owner node, replication's cost to the owner, failover (run alone, in its own JVM).",
        List.of(new Benchmark("cluster", "", ClusterBench::run))));
    // not in `all`: a region of three router nodes in this JVM per variant
    cli.addSubcommand("cluster-relay", subcommand("Books through a non-owner node vs the owner, one region of three "
        + "nodes per relay path / transport setting (run alone, in its own JVM).",
        List.of(new Benchmark("cluster-relay", "", ClusterBench::runRelay))));
    // not in `all`: ten router nodes in this JVM
    cli.addSubcommand("dispatchers", subcommand("One pool of threads for every actor (the production config) vs "
        + "Pekko's separate pools, side by side: the owner's Books with replication on, Books through a non-owner, "
        + "Book + Release across regions (run alone, in its own JVM).",
        List.of(new Benchmark("dispatchers", "", DispatchersBench::run))));
    // not in `all`: two router nodes of two regions in this JVM
    cli.addSubcommand("regions", subcommand("Two regions of one node each in this JVM: global vs regional Select "
        + "per call (JMH), Book + Release through the cross-region proxy vs local (run alone, in its own JVM).",
        List.of(new Benchmark("regions", "", RegionsBench::run))));
    // not in `all`: three router nodes in this JVM
    cli.addSubcommand("owner", subcommand("One region of three nodes in this JVM: Book + Release over gRPC from a "
        + "round-robin client, relay path vs owner-direct vs the owner alone; the front's relay vs gRPC to the owner "
        + "(run alone, in its own JVM).", List.of(new Benchmark("owner", "", OwnerBench::runRegion))));
    // not in `all`: two router nodes of two regions in this JVM
    cli.addSubcommand("owner-regions", subcommand("Two regions of one node each in this JVM: global Book + Release "
        + "over gRPC through the cross-region proxy vs sent to the other region's owner node vs local (run alone, "
        + "in its own JVM).", List.of(new Benchmark("owner-regions", "", OwnerBench::runRegions))));
    // not in `all`: child JVMs, one per measurement
    cli.addSubcommand("common-pool", subcommand("Pekko's Java ask from chained callers with the JDK common pool at "
        + "parallelism 1 and 4, each in a child JVM (asks/s, CPU per ask, threads started).",
        List.of(new Benchmark("common-pool", "", CommonPoolBench::run))));
    // not in `all`: its own one-node cluster, a ZMQ publisher and HTTP servers in this JVM
    cli.addSubcommand("engines", subcommand("Engines: blocks/s from ZMQ into the index per connector (with the "
        + "decode / translate / index stages alone beside it), publish → index lag at 10k blocks/s, scrape cost per "
        + "engine.", List.of(new Benchmark("engines", "", EnginesBench::run))));
    cli.addSubcommand("transport", new io.kvrouter.bench.transport.TransportBench());
    cli.addSubcommand("leaks", new LeakBench());
    cli.addSubcommand("front", new FrontBench());
    cli.addSubcommand("peers", new PeersBench());
    cli.addSubcommand("epp", new EppBench());
    return cli.execute(args);
  }

  private static CommandLine subcommand(String description, List<Benchmark> benchmarks) {
    CommandLine sub = new CommandLine(new Sub(benchmarks));
    sub.getCommandSpec().usageMessage().description(description);
    return sub;
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "name a benchmark (or all)");
  }

  /** Options every benchmark takes. */
  static final class Common {
    @Option(names = "--out", description = "results directory (default: modules/router-bench/results)")
    Path out;

    @Option(names = "--quick", description = "tiny sizes: checks that everything runs, not a measurement")
    boolean quick;

    Path outDir() {
      if (out != null) {
        return out;
      }
      String property = System.getProperty(RESULTS_PROPERTY);
      if (property != null) {
        return Path.of(property);
      }
      Path inRepo = Path.of("modules", "router-bench");
      return Files.isDirectory(inRepo) ? inRepo.resolve("results") : Path.of("results");
    }
  }

  /** A subcommand running one or more benchmarks. */
  @Command(mixinStandardHelpOptions = true)
  static final class Sub implements Callable<Integer> {
    @Mixin
    Common common;

    private final List<Benchmark> benchmarks;

    Sub(List<Benchmark> benchmarks) {
      this.benchmarks = benchmarks;
    }

    @Override
    public Integer call() throws Exception {
      if (common.quick) {
        Progress.line("bench", "--quick: tiny sizes, figures are not measurements");
      }
      for (Benchmark b : benchmarks) {
        for (Path file : b.runs().run(common.outDir(), common.quick)) {
          Progress.line("bench", "wrote %s", file);
        }
      }
      return 0;
    }
  }
}
