package io.kvrouter.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/** Runs {@link SelectAllocBenchmark} through JMH's Runner with the GC profiler and writes bytes/op. */
final class AllocBench {
  static final String BENCHMARK_LIST = "META-INF/BenchmarkList";

  private AllocBench() {}

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    if (AllocBench.class.getClassLoader().getResource(BENCHMARK_LIST) == null) {
      throw new IllegalStateException(BENCHMARK_LIST + " is missing: the JMH annotation processor did not run "
          + "(jmh-generator-annprocess must be on the compile classpath)");
    }
    int forks = quick ? 0 : 1;
    int warmups = quick ? 1 : 3;
    int iterations = quick ? 2 : 5;
    TimeValue time = quick ? TimeValue.milliseconds(200) : TimeValue.seconds(1);
    Options options = new OptionsBuilder()
        .include(SelectAllocBenchmark.class.getName() + ".select")
        .addProfiler(GCProfiler.class)
        .forks(forks)
        .threads(1)
        .warmupIterations(warmups)
        .warmupTime(time)
        .measurementIterations(iterations)
        .measurementTime(time)
        .jvmArgsAppend("-Djava.util.concurrent.ForkJoinPool.common.parallelism=4", "-Xmx1g")
        .shouldFailOnError(true)
        .verbosity(VerboseMode.SILENT)
        .build();
    Progress.line("alloc", "JMH: %d fork(s), %d × %s warm-up, %d × %s measurement, -prof gc", forks, warmups, time,
        iterations, time);
    Collection<RunResult> results = new Runner(options).run();
    Report report = new Report("Allocation per inline Select (JMH, -prof gc)");
    report.paragraph(String.format("`SelectAllocBenchmark.select`: one `Selector.select` on a 4-worker view over a "
        + "populated `ModelKvIndex`, requests of 64 blocks (the same request under least_in_flight, which ignores "
        + "the hashes). JMH %s through the Runner API: %d fork(s), %d × %s warm-up, %d × %s measurement, one "
        + "thread. bytes/op is `gc.alloc.rate.norm`.", org.openjdk.jmh.util.Utils.class.getPackage()
        .getImplementationVersion() == null ? "1.37" : org.openjdk.jmh.util.Utils.class.getPackage()
        .getImplementationVersion(), forks, warmups, time, iterations, time));
    Report.Table table = new Report.Table("policy", "blocks", "workers", "ns/op", "bytes/op (gc.alloc.rate.norm)");
    List<RunResult> sorted = new ArrayList<>(results);
    sorted.sort((a, b) -> a.getParams().getParam("policy").compareTo(b.getParams().getParam("policy")));
    for (RunResult r : sorted) {
      Result<?> primary = r.getPrimaryResult();
      Result<?> norm = secondary(r.getSecondaryResults(), "gc.alloc.rate.norm");
      String policy = r.getParams().getParam("policy");
      double bytes = norm == null ? Double.NaN : norm.getScore();
      Progress.line("alloc", "%-15s %.1f ns/op, %.1f bytes/op", policy, primary.getScore(), bytes);
      table.row(policy, r.getParams().getParam("blocks"), r.getParams().getParam("workers"),
          String.format(java.util.Locale.ROOT, "%.1f ± %.1f", primary.getScore(), primary.getScoreError()),
          norm == null ? "n/a" : String.format(java.util.Locale.ROOT, "%.1f", bytes));
    }
    report.table(table);
    return List.of(report.write(out, "alloc.md"));
  }

  private static Result<?> secondary(Map<String, Result> secondary, String suffix) {
    for (Map.Entry<String, Result> e : secondary.entrySet()) {
      if (e.getKey().endsWith(suffix)) {
        return e.getValue();
      }
    }
    return null;
  }
}
