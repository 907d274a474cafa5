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
import java.util.Locale;
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
import org.openjdk.jmh.profile.GCProfiler;
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
@BenchmarkMode(Mode.SampleTime)
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
    log.record(DecisionKind.SELECT, view, request, scratch, System.currentTimeMillis());
    return result;
  }

  @Benchmark
  public Explanation selectExplained() {
    Candidates scratch = Candidates.forCurrentThread();
    Selector.select(view, request, scratch, Fixtures.CLOCK);
    long now = System.currentTimeMillis();
    log.record(DecisionKind.SELECT, view, request, scratch, now);
    return Decision.capture(DecisionKind.SELECT, view, request, scratch, now).explain("node");
  }

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    Jmh jmh = new Jmh(quick);
    Report report = new Report("What recording decisions (explain) adds to an inline Select (JMH)");
    report.paragraph("`ExplainBenchmark`: `select` is `Selector.select` alone over a view built by `AdmissionState` "
        + "over a populated `ModelKvIndex` (as in `metrics.md`): least_in_flight over 4 workers with 8-block "
        + "requests, kv over 64 workers (one rank each) with 128-block requests; `selectRecorded` adds what "
        + "`ModelClient.selectWithoutAdmission` does with `kvrouter.explain.enabled` on: a wall-clock read and "
        + "`DecisionLog.record` into one log shared by every JMH thread (striped by thread, no lock, no shared "
        + "counter; copies of the candidate arrays into the slot's reused buffer, `System.nanoTime()`); "
        + "`selectExplained` is a Select with `RouteRequest.explain`: recorded, then captured again and rendered "
        + "(`Decision.capture`, `Decision.explain`, no proto mapping). "
        + jmh.describe() + "; sample-time mode (calls' times sampled; the score is the mean, p50 the median), "
        + "bytes/op from `-prof gc`.");
    List<RunResult> results = new ArrayList<>();
    String include = ExplainBenchmark.class.getName() + ".select";
    for (int threads : quick ? new int[] {1} : new int[] {1, 2}) {
      results.addAll(jmh.run(jmh.options(include).threads(threads).addProfiler(GCProfiler.class).build()));
    }
    report.table(Jmh.table(results));
    report.paragraph("Added per Select by recording, from the medians (p50) above, which a shared host's stalls "
        + "move less than the means; against the " + GRPC_SELECT_SERVER_CPU_MICROS + " µs of server CPU of a gRPC "
        + "Select (the low end of the transport bench's range; `transport-select.md` holds its latest run):");
    Report.Table added = new Report.Table("scenario", "threads", "select p50 (ns)", "selectRecorded p50 (ns)",
        "added (ns)", "added / gRPC Select CPU", "selectExplained p50 (ns)");
    for (RunResult plain : results) {
      if (!plain.getParams().getBenchmark().endsWith(".select")) {
        continue;
      }
      String scenario = Jmh.param(plain, "scenario");
      int threads = plain.getParams().getThreads();
      double base = p50(plain);
      double recorded = p50(find(results, "selectRecorded", scenario, threads));
      double explained = p50(find(results, "selectExplained", scenario, threads));
      added.row(scenario, threads, Report.ns(base), Report.ns(recorded), Report.ns(recorded - base),
          String.format(Locale.ROOT, "%.1f %%", 100 * (recorded - base) / (GRPC_SELECT_SERVER_CPU_MICROS * 1000)),
          Report.ns(explained));
    }
    report.table(added);
    return List.of(report.write(out, "explain.md"));
  }

  /**
   * Server CPU of one gRPC Select: a fixed reference, the low end of the range an early transport bench run measured
   * (results/transport-select.md holds the latest run).
   */
  private static final double GRPC_SELECT_SERVER_CPU_MICROS = 23;

  private static double p50(RunResult r) {
    return r.getPrimaryResult().getStatistics().getPercentile(50);
  }

  private static RunResult find(List<RunResult> results, String method, String scenario, int threads) {
    return results.stream()
        .filter(r -> r.getParams().getBenchmark().endsWith("." + method)
            && Jmh.param(r, "scenario").equals(scenario) && r.getParams().getThreads() == threads)
        .findFirst().orElseThrow();
  }
}
