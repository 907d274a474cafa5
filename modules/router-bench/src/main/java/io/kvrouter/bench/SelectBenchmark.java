package io.kvrouter.bench;

import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.nio.file.Path;
import java.util.List;
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

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    Jmh jmh = new Jmh(quick);
    String select = SelectBenchmark.class.getName() + ".select$";
    String lookups = SelectBenchmark.class.getName() + ".*Lookup$";
    String[] workers = quick ? new String[] {"4", "64"} : new String[] {"4", "64", "1024"};
    String[] blocks = quick ? new String[] {"1", "64"} : new String[] {"1", "64", "1024"};
    Report report = new Report("Inline Select cost vs workers and request length (JMH)");
    report.paragraph("`SelectBenchmark`: one thread calls `Selector.select` on a view built by `AdmissionState` "
        + "over a `ModelKvIndex` fed with Stored events: worker w holds a prefix of the request spread over "
        + "0–100 % of it, plus 2 chains of its own. " + jmh.describe() + "; the score is JMH's average time, "
        + "bytes/op is `gc.alloc.rate.norm` (`-prof gc`). `kvLookup` is `overlaps(view, hashes, candidates)` "
        + "alone; `unmatchedLookup` is the same call for a request nobody holds (the fixed cost per candidate).");
    report.heading("Select by worker count (requests of 64 blocks)");
    report.table(Jmh.table(jmh.run(jmh.options(select).param("workers", workers).param("blocks", "64")
        .addProfiler(GCProfiler.class).build())));
    report.heading("kv Select by request length (64 workers)");
    report.table(Jmh.table(jmh.run(jmh.options(select).param("policy", "kv").param("workers", "64")
        .param("blocks", blocks).addProfiler(GCProfiler.class).build())));
    report.heading("KV lookup alone by worker count (64 blocks) and by request length (64 workers)");
    report.table(Jmh.table(jmh.run(jmh.options(lookups).param("policy", "kv").param("workers", workers)
        .param("blocks", "64").build())));
    report.table(Jmh.table(jmh.run(jmh.options(lookups).param("policy", "kv").param("workers", "64")
        .param("blocks", blocks).build())));
    return List.of(report.write(out, "growth.md"));
  }
}
