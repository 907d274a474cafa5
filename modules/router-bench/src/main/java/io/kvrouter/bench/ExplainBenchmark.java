package io.kvrouter.bench;

import io.kvrouter.core.explain.Decision;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.DecisionLog;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
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
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;

/**
 * JMH: what recording a decision (explain) adds to an inline Select. {@code select} is {@link Selector#select}
 * alone; {@code selectRecorded} is what {@code ModelClient.selectWithoutAdmission} does with explain on: the same
 * pick, then a clock read, {@link Decision#capture} (copies of the candidate arrays) and {@link DecisionLog#record}
 * into the model's shared log; {@code selectExplained} is a Select that set {@code RouteRequest.explain}: the
 * recorded pick plus the rendering of its explanation (proto mapping not included).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ExplainBenchmark {
  /** policy/workers/request blocks */
  @Param({"least_in_flight/4/8", "kv/64/128"})
  public String scenario;

  private SelectionView view;
  private SelectionRequest request;
  private DecisionLog log;

  @Setup(Level.Trial)
  public void setUp() {
    String[] parts = scenario.split("/");
    int workers = Integer.parseInt(parts[1]);
    long[] hashes = Fixtures.chain(new SplittableRandom(workers * 31L), Integer.parseInt(parts[2]));
    view = Fixtures.kvState(workers, parts[0], hashes, 2, workers * 17L).view();
    request = Fixtures.request(hashes, "explain");
    log = new DecisionLog(64);
  }

  @Benchmark
  public SelectionResult select() {
    return Selector.select(view, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
  }

  @Benchmark
  public SelectionResult selectRecorded() {
    Candidates scratch = Candidates.forCurrentThread();
    SelectionResult result = Selector.select(view, request, scratch, Fixtures.CLOCK);
    log.record(Decision.capture(DecisionKind.SELECT, view, request, scratch, System.currentTimeMillis()));
    return result;
  }

  @Benchmark
  public Explanation selectExplained() {
    Candidates scratch = Candidates.forCurrentThread();
    Selector.select(view, request, scratch, Fixtures.CLOCK);
    Decision decision = Decision.capture(DecisionKind.SELECT, view, request, scratch, System.currentTimeMillis());
    log.record(decision);
    return decision.explain("node");
  }

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    Jmh jmh = new Jmh(quick);
    Report report = new Report("What recording decisions (explain) adds to an inline Select (JMH)");
    report.paragraph("`ExplainBenchmark`: `select` is `Selector.select` alone over a view built by `AdmissionState` "
        + "over a populated `ModelKvIndex` (as in `metrics.md`): least_in_flight over 4 workers with 8-block "
        + "requests, kv over 64 workers (one rank each) with 128-block requests; `selectRecorded` adds what "
        + "`ModelClient.selectWithoutAdmission` does with `kvrouter.explain.enabled` on: a wall-clock read, "
        + "`Decision.capture` (copies of the candidate arrays, `System.nanoTime()`) and `DecisionLog.record` into one "
        + "log shared by every JMH thread (striped by thread, no lock, no shared counter); `selectExplained` is a "
        + "Select with `RouteRequest.explain`: recorded, then rendered (`Decision.explain`, no proto mapping). "
        + jmh.describe() + "; the score is JMH's average time per call on each thread.");
    List<RunResult> results = new ArrayList<>();
    String include = ExplainBenchmark.class.getName() + ".select";
    for (int threads : quick ? new int[] {1} : new int[] {1, 2}) {
      results.addAll(jmh.run(jmh.options(include).threads(threads).build()));
    }
    report.table(Jmh.table(results));
    return List.of(report.write(out, "explain.md"));
  }
}
