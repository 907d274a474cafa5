package io.kvrouter.bench;

import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
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
 * JMH: one inline Select's cost and allocation vs the number of workers (least_in_flight, kv) and, under kv, the
 * request's length in blocks, over a view whose KV index is populated: worker w holds a prefix of the request spread
 * over 0–100 % of it, plus 2 chains of its own. For kv, the KV lookup alone ({@code overlaps}) is measured too, for
 * the request and for one nobody holds (the fixed cost per candidate). {@link #run} writes {@code growth.md}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class SelectBenchmark {
  @Param({"least_in_flight", "kv"})
  public String policy;

  @Param({"4"})
  public int workers;

  @Param({"64"})
  public int blocks;

  private SelectionView view;
  private SelectionRequest request;
  private long[] hashes;
  private long[] unknown;
  private final Candidates lookup = new Candidates();

  @Setup
  public void setUp() {
    hashes = Fixtures.chain(new SplittableRandom(workers * 31L + blocks), blocks);
    unknown = Fixtures.chain(new SplittableRandom(-blocks), blocks);
    view = Fixtures.kvState(workers, policy, hashes, 2, workers * 17L + blocks).view();
    request = Fixtures.request(hashes, "growth");
    LoadProjection.projectWorkerLoads(view, request, lookup, Fixtures.CLOCK);
  }

  @Benchmark
  public SelectionResult select() {
    return Selector.select(view, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
  }

  @Benchmark
  public int kvLookup() {
    view.overlapSource().overlaps(view, hashes, lookup);
    return lookup.deviceOverlap(0);
  }

  @Benchmark
  public int unmatchedLookup() {
    view.overlapSource().overlaps(view, unknown, lookup);
    return lookup.deviceOverlap(0);
  }

  /** One table row: a Select's figures and, for kv, the two lookups' ns/op (NaN otherwise). */
  private record Row(String policy, int workers, int blocks, double selectNs, double bytes, double lookupNs,
      double unmatchedNs) {}

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    Jmh jmh = new Jmh(quick);
    String[] workerCounts = quick ? new String[] {"4", "64"} : new String[] {"4", "64", "1024"};
    String[] blockCounts = quick ? new String[] {"1", "64"} : new String[] {"1", "64", "1024"};
    List<Row> byWorkers = measure(jmh, new String[] {"least_in_flight", "kv"}, workerCounts, new String[] {"64"});
    List<Row> byBlocks = measure(jmh, new String[] {"kv"}, new String[] {"64"}, blockCounts);
    Report report = new Report("Inline Select cost vs workers and request length (JMH)");
    report.paragraph("`SelectBenchmark`: one thread calls `Selector.select` on a view built by `AdmissionState` "
        + "over a `ModelKvIndex` fed with Stored events: worker w holds a prefix of the request spread over "
        + "0–100 % of it, plus 2 chains of its own. " + jmh.describe() + "; ns/op is JMH's average time, "
        + "bytes/op is `gc.alloc.rate.norm` (`-prof gc`). \"KV lookup\" is `overlaps(view, hashes, candidates)` "
        + "alone; \"unmatched lookup\" is the same call for a request nobody holds (the fixed cost per candidate).");
    report.heading("By worker count (requests of 64 blocks)");
    report.table(table(byWorkers, "workers", Row::workers));
    report.heading("kv by request length (64 workers)");
    report.table(table(byBlocks, "blocks", Row::blocks));
    return List.of(report.write(out, "growth.md"));
  }

  private static List<Row> measure(Jmh jmh, String[] policies, String[] workerCounts, String[] blockCounts)
      throws RunnerException {
    String name = SelectBenchmark.class.getName();
    List<RunResult> selects = jmh.run(jmh.options(name + ".select$").param("policy", policies)
        .param("workers", workerCounts).param("blocks", blockCounts).addProfiler(GCProfiler.class).build());
    List<RunResult> lookups = jmh.run(jmh.options(name + ".*Lookup$").param("policy", "kv")
        .param("workers", workerCounts).param("blocks", blockCounts).build());
    List<Row> rows = new ArrayList<>();
    for (RunResult r : selects) {
      String policy = Jmh.param(r, "policy");
      int workers = Integer.parseInt(Jmh.param(r, "workers"));
      int blocks = Integer.parseInt(Jmh.param(r, "blocks"));
      double lookup = Double.NaN;
      double unmatched = Double.NaN;
      for (RunResult l : lookups) {
        if (policy.equals("kv") && Jmh.param(l, "workers").equals(String.valueOf(workers))
            && Jmh.param(l, "blocks").equals(String.valueOf(blocks))) {
          boolean matched = l.getParams().getBenchmark().endsWith(".kvLookup");
          lookup = matched ? l.getPrimaryResult().getScore() : lookup;
          unmatched = matched ? unmatched : l.getPrimaryResult().getScore();
        }
      }
      Row row = new Row(policy, workers, blocks, r.getPrimaryResult().getScore(), Jmh.bytesPerOp(r), lookup,
          unmatched);
      Progress.line("growth", "%-15s %5d workers %5d blocks: %s ns/op, %.0f bytes/op, KV lookup %s ns", policy,
          workers, blocks, Report.ns(row.selectNs()), row.bytes(), Report.ns(row.lookupNs()));
      rows.add(row);
    }
    rows.sort(Comparator.comparing(Row::policy, Comparator.reverseOrder()).thenComparingInt(Row::workers)
        .thenComparingInt(Row::blocks));
    return rows;
  }

  private static Report.Table table(List<Row> rows, String per, java.util.function.ToIntFunction<Row> divisor) {
    Report.Table t = new Report.Table("policy", "workers", "blocks", "Select ns/op", "bytes/op",
        "ns per " + per.substring(0, per.length() - 1), "KV lookup ns/op", "unmatched lookup ns/op");
    for (Row r : rows) {
      t.row(r.policy(), r.workers(), r.blocks(), Report.ns(r.selectNs()),
          String.format(Locale.ROOT, "%.0f", r.bytes()), Report.ns(r.selectNs() / divisor.applyAsInt(r)),
          Report.ns(r.lookupNs()), Report.ns(r.unmatchedNs()));
    }
    return t;
  }
}
