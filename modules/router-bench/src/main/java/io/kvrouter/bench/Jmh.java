package io.kvrouter.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/** The JMH benchmarks of this module run through JMH's Runner API with one set of settings, and their results. */
final class Jmh {
  static final String BENCHMARK_LIST = "META-INF/BenchmarkList";

  private final boolean quick;

  Jmh(boolean quick) {
    this.quick = quick;
  }

  int forks() {
    return quick ? 0 : 1;
  }

  int warmups() {
    return quick ? 1 : 3;
  }

  int iterations() {
    return quick ? 1 : 4;
  }

  TimeValue time() {
    return quick ? TimeValue.milliseconds(100) : TimeValue.milliseconds(500);
  }

  /** The settings shared by every run; {@code --quick} runs in this JVM with tiny iterations. */
  ChainedOptionsBuilder options(String include) {
    return new OptionsBuilder()
        .include(include)
        .forks(forks())
        .warmupIterations(warmups())
        .warmupTime(time())
        .measurementIterations(iterations())
        .measurementTime(time())
        .jvmArgsAppend("-Djava.util.concurrent.ForkJoinPool.common.parallelism=4", "-Xmx2g")
        .shouldFailOnError(true)
        .verbosity(VerboseMode.SILENT);
  }

  /** For the results files: how JMH ran. */
  String describe() {
    return String.format(Locale.ROOT, "JMH %s through the Runner API: %s, %d × %s warm-up and %d × %s measurement "
            + "iterations per configuration", "1.37", quick ? "in this JVM" : forks() + " fork per configuration",
        warmups(), time(), iterations(), time());
  }

  List<RunResult> run(Options options) throws RunnerException {
    if (Jmh.class.getClassLoader().getResource(BENCHMARK_LIST) == null) {
      throw new IllegalStateException(BENCHMARK_LIST + " is missing: the JMH annotation processor did not run "
          + "(jmh-generator-annprocess must be on the compile classpath)");
    }
    String threads = options.getThreadGroups().hasValue() ? Arrays.toString(options.getThreadGroups().get())
        : String.valueOf(options.getThreads().orElse(1));
    Progress.line("jmh", "running %s (threads %s)", options.getIncludes(), threads);
    return new ArrayList<>(new Runner(options).run());
  }

  static String param(RunResult r, String name) {
    return r.getParams().getParam(name);
  }

  /** The result of one method of a {@code @Group} benchmark, or a profiler's result, by the end of its label. */
  static Result<?> secondary(RunResult r, String suffix) {
    for (var e : r.getSecondaryResults().entrySet()) {
      if (e.getKey().endsWith(suffix)) {
        return e.getValue();
      }
    }
    return null;
  }

  /**
   * One Markdown row per result, or per method of a {@code @Group} benchmark when {@code groupMethods} names them:
   * the method, JMH threads, every parameter, the score with its error, the p50 / p99 / p99.9 of a sample-time run
   * and the bytes per operation when {@code -prof gc} ran.
   */
  static Report.Table table(List<RunResult> results, String... groupMethods) {
    RunResult first = results.get(0);
    List<String> params = new ArrayList<>(first.getParams().getParamsKeys());
    boolean sampled = first.getParams().getMode() == Mode.SampleTime;
    boolean gc = secondary(first, GC_NORM) != null;
    List<String> header = new ArrayList<>(List.of("benchmark", "threads"));
    header.addAll(params);
    header.add("score (" + first.getPrimaryResult().getScoreUnit() + ")");
    if (sampled) {
      header.addAll(List.of("p50", "p99", "p99.9"));
    }
    if (gc) {
      header.add("bytes/op");
    }
    Report.Table table = new Report.Table(header.toArray(String[]::new));
    for (RunResult r : results) {
      String benchmark = r.getParams().getBenchmark();
      String name = benchmark.substring(benchmark.lastIndexOf('.') + 1);
      List<String> methods = groupMethods.length == 0 ? List.of(name) : List.of(groupMethods);
      for (String method : methods) {
        Result<?> result = groupMethods.length == 0 ? r.getPrimaryResult() : secondary(r, method);
        if (result == null) {
          continue;
        }
        List<Object> row = new ArrayList<>(List.of(groupMethods.length == 0 ? name : name + ":" + method,
            r.getParams().getThreads()));
        params.forEach(p -> row.add(param(r, p)));
        row.add(String.format(Locale.ROOT, "%s ± %s", Report.ns(result.getScore()),
            Report.ns(result.getScoreError())));
        if (sampled) {
          for (double percentile : new double[] {50, 99, 99.9}) {
            row.add(Report.ns(result.getStatistics().getPercentile(percentile)));
          }
        }
        if (gc) {
          row.add(String.format(Locale.ROOT, "%.0f", bytesPerOp(r)));
        }
        table.row(row.toArray());
      }
    }
    return table;
  }

  private static final String GC_NORM = "gc.alloc.rate.norm";

  /** Bytes allocated per operation, from {@code -prof gc}. */
  static double bytesPerOp(RunResult r) {
    Result<?> norm = secondary(r, GC_NORM);
    return norm == null ? Double.NaN : norm.getScore();
  }
}
