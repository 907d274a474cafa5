package io.kvrouter.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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
    description = "kvrouter benchmarks: each writes Markdown tables under the results directory.",
    subcommands = {Bench.Advisory.class, Bench.Growth.class, Bench.PickerLock.class, Bench.Admission.class,
        Bench.KvIndexCmd.class, Bench.All.class})
public final class Bench implements Runnable {
  static final String RESULTS_PROPERTY = "kvrouter.bench.results";

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    // 2 cores give the common pool parallelism 1, and then every async stage starts a thread (DESIGN.md §5)
    if (System.getProperty("java.util.concurrent.ForkJoinPool.common.parallelism") == null) {
      System.setProperty("java.util.concurrent.ForkJoinPool.common.parallelism", "4");
    }
    System.exit(run(args));
  }

  /** Runs the command line in this JVM and returns its exit code (the tests call this). */
  public static int run(String... args) {
    Report.command = "bin/bench " + String.join(" ", args);
    return new CommandLine(new Bench())
        .addSubcommand("transport", new io.kvrouter.bench.transport.TransportBench())
        .execute(args);
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

  abstract static class Sub implements Callable<Integer> {
    @Mixin
    Common common;

    abstract List<Path> execute(Path out, boolean quick) throws Exception;

    @Override
    public Integer call() throws Exception {
      if (common.quick) {
        Progress.line("bench", "--quick: tiny sizes, figures are not measurements");
      }
      for (Path file : execute(common.outDir(), common.quick)) {
        Progress.line("bench", "wrote %s", file);
      }
      return 0;
    }
  }

  @Command(name = "advisory", mixinStandardHelpOptions = true,
      description = "Advisory Select: actor vs inline at 1/16/256 callers on 4 threads.")
  static final class Advisory extends Sub {
    @Override
    List<Path> execute(Path out, boolean quick) {
      return AdvisoryBench.run(out, quick);
    }
  }

  @Command(name = "growth", mixinStandardHelpOptions = true,
      description = "JMH: inline Select ns/op and bytes/op vs worker count and request length.")
  static final class Growth extends Sub {
    @Override
    List<Path> execute(Path out, boolean quick) throws Exception {
      return SelectBenchmark.run(out, quick);
    }
  }

  @Command(name = "picker", mixinStandardHelpOptions = true,
      description = "JMH: locked vs lock-free picker slots at 1, 2 and 4 threads.")
  static final class PickerLock extends Sub {
    @Override
    List<Path> execute(Path out, boolean quick) throws Exception {
      return PickerLockBenchmark.run(out, quick);
    }
  }

  @Command(name = "admission", mixinStandardHelpOptions = true,
      description = "Books/s through the admission actor vs a trivial sharded ask, with mailbox depth.")
  static final class Admission extends Sub {
    @Override
    List<Path> execute(Path out, boolean quick) {
      return AdmissionBench.run(out, quick);
    }
  }

  @Command(name = "kvindex", mixinStandardHelpOptions = true,
      description = "KV index: events/s, lookup latency with concurrent readers, heap per entry.")
  static final class KvIndexCmd extends Sub {
    @Override
    List<Path> execute(Path out, boolean quick) throws Exception {
      return KvIndexBench.run(out, quick);
    }
  }

  @Command(name = "all", mixinStandardHelpOptions = true, description = "Every benchmark, in this JVM.")
  static final class All extends Sub {
    @Override
    List<Path> execute(Path out, boolean quick) throws Exception {
      List<Path> files = new ArrayList<>();
      files.addAll(AdvisoryBench.run(out, quick));
      files.addAll(AdmissionBench.run(out, quick));
      files.addAll(SelectBenchmark.run(out, quick));
      files.addAll(PickerLockBenchmark.run(out, quick));
      files.addAll(KvIndexBench.run(out, quick));
      return files;
    }
  }
}
