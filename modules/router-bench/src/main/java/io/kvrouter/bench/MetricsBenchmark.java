package io.kvrouter.bench;

import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.server.RouterNode;
import io.kvrouter.server.metrics.RouterMetrics;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;

/**
 * JMH: what the Select timer adds to an inline Select. {@code select} is the inline pick alone ({@link Selector}
 * over a view with a populated KV index, as {@link SelectBenchmark}); {@code selectTimed} is the same pick with what
 * the gRPC service layer adds around it: a clock read before, and {@link RouterMetrics#selected} after (a clock
 * read, the model's meters looked up, the per-policy timer found, one sample into its bucketed histogram), on the
 * registry of a real one-node router. One view is shared by every JMH thread, so at 2 threads both record into the
 * same timer.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class MetricsBenchmark {
  @Param({"least_in_flight", "kv"})
  public String policy;

  @Param({"4", "64"})
  public int workers;

  private RouterNode node;
  private RouterMetrics metrics;
  private SelectionView view;
  private SelectionRequest request;

  @Setup(Level.Trial)
  public void setUp() {
    node = LoopbackNode.start("");
    metrics = RouterMetrics.get(node.system());
    long[] hashes = Fixtures.chain(new SplittableRandom(workers * 31L), 64);
    view = Fixtures.kvState(workers, policy, hashes, 2, workers * 17L).view();
    request = Fixtures.request(hashes, "metrics");
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    node.close();
  }

  @Benchmark
  public SelectionResult select() {
    return Selector.select(view, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
  }

  @Benchmark
  public SelectionResult selectTimed() {
    long start = System.nanoTime();
    SelectionResult result = Selector.select(view, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
    metrics.selected(view.model(), view, start);
    return result;
  }

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    Jmh jmh = new Jmh(quick);
    Report report = new Report("What the Select timer adds to an inline Select (JMH)");
    report.paragraph("`MetricsBenchmark`: `select` is `Selector.select` alone over a view built by `AdmissionState` "
        + "over a populated `ModelKvIndex` (requests of 64 blocks; the workers hold prefixes of it, as in "
        + "`growth.md`); `selectTimed` is the same call with what `RouterService.select` adds for metrics: "
        + "`System.nanoTime()` before, `RouterMetrics.selected(model, view, start)` after (a second clock read, the "
        + "model's meters, the policy's timer, one sample into a histogram of 18 fixed buckets), on the registry of "
        + "a running one-node router. At 2 threads both threads share the view and the timer. " + jmh.describe()
        + "; the score is JMH's average time per call on each thread.");
    List<RunResult> results = new ArrayList<>();
    String include = MetricsBenchmark.class.getName() + ".select";
    for (int threads : quick ? new int[] {1} : new int[] {1, 2}) {
      var options = jmh.options(include).threads(threads);
      if (quick) {
        options.param("policy", "kv").param("workers", "4");
      }
      results.addAll(jmh.run(options.build()));
    }
    report.table(Jmh.table(results));
    return List.of(report.write(out, "metrics.md"));
  }
}
