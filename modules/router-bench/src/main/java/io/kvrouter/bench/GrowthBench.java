package io.kvrouter.bench;

import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.HdrHistogram.AbstractHistogram;

/**
 * How one inline Select's cost grows with the number of workers (least_in_flight and kv) and, under kv, with the
 * request's length in blocks, over a populated event-fed KV index. Single thread; each configuration is warmed up,
 * then timed per call (p50/p99) and in a batch (mean); for kv the KV lookup alone ({@code overlaps}) is timed too.
 */
final class GrowthBench {
  /** {@code measureMillis} is per round: half timed per call, half in batches (and as much again per KV lookup). */
  record Settings(int[] workers, int[] blocks, int workersForBlocks, int blocksForWorkers, long warmupMillis,
      long measureMillis, int rounds, int maxCalls, int background) {
    static Settings defaults(boolean quick) {
      return quick
          ? new Settings(new int[] {4, 64, 1024}, new int[] {1, 64, 1024}, 64, 64, 30, 60, 1, 2_000, 1)
          : new Settings(new int[] {4, 64, 1024}, new int[] {1, 64, 1024}, 64, 64, 700, 500, 3, 200_000, 2);
    }
  }

  record Row(String policy, int workers, int blocks, long entries, double meanNs, double p50Ns, double p99Ns,
      double lookupMeanNs, double unmatchedLookupNs, long overlapSum, long calls) {
    /**
     * KV lookup ns per overlapped (candidate, block) pair, after taking off the cost of the same lookup for a
     * request nobody holds (the per-candidate fixed cost): what walking along the matched path costs.
     */
    String lookupPerOverlapBlock() {
      return Double.isNaN(lookupMeanNs) || overlapSum == 0 ? "–"
          : Report.ns(Math.max(0, lookupMeanNs - unmatchedLookupNs) / overlapSum);
    }

    String unmatchedPerCandidate() {
      return Double.isNaN(unmatchedLookupNs) ? "–" : Report.ns(unmatchedLookupNs / workers);
    }
  }

  private static long sink;

  private GrowthBench() {}

  static List<Path> run(Path out, boolean quick) {
    Settings s = Settings.defaults(quick);
    List<Row> byWorkers = new ArrayList<>();
    for (String policy : new String[] {"least_in_flight", "kv"}) {
      for (int workers : s.workers()) {
        byWorkers.add(measure(s, policy, workers, s.blocksForWorkers()));
      }
    }
    List<Row> byBlocks = new ArrayList<>();
    for (int blocks : s.blocks()) {
      byBlocks.add(measure(s, "kv", s.workersForBlocks(), blocks));
    }
    return List.of(write(out, s, byWorkers, byBlocks));
  }

  static Row measure(Settings s, String policy, int workers, int blocks) {
    long[] hashes = Fixtures.chain(new SplittableRandom(workers * 31L + blocks), blocks);
    var state = Fixtures.kvState(workers, policy, hashes, s.background(), workers * 17L + blocks);
    SelectionView view = state.view();
    long entries = ((io.kvrouter.core.indexer.ModelKvIndex) view.overlapSource()).events().entryCount();
    SelectionRequest request = Fixtures.request(hashes, "growth");
    Candidates scratch = Candidates.forCurrentThread();
    // warm-up
    long end = System.nanoTime() + s.warmupMillis() * 1_000_000;
    while (System.nanoTime() < end) {
      for (int k = 0; k < 64; k++) {
        consume(Selector.select(view, request, scratch, Fixtures.CLOCK));
      }
    }
    double[] means = new double[s.rounds()];
    double[] p50s = new double[s.rounds()];
    double[] p99s = new double[s.rounds()];
    double[] lookups = new double[s.rounds()];
    double[] unmatched = new double[s.rounds()];
    long calls = 0;
    long overlapSum = 0;
    Candidates c = new Candidates();
    long[] unknown = Fixtures.chain(new SplittableRandom(-blocks), blocks);
    if (policy.equals("kv")) {
      LoadProjection.projectWorkerLoads(view, request, c, System.currentTimeMillis());
      view.overlapSource().overlaps(view, hashes, c);
      for (int i = 0; i < c.size(); i++) {
        overlapSum += c.deviceOverlap(i);
      }
    }
    for (int round = 0; round < s.rounds(); round++) {
      // per-call latency
      AbstractHistogram h = Latency.histogram();
      end = System.nanoTime() + s.measureMillis() * 1_000_000 / 2;
      long t1;
      long n = 0;
      do {
        long t0 = System.nanoTime();
        SelectionResult r = Selector.select(view, request, scratch, Fixtures.CLOCK);
        t1 = System.nanoTime();
        Latency.record(h, t1 - t0);
        consume(r);
        n++;
      } while (n < s.maxCalls() && (t1 < end || n < 100));
      calls += n;
      p50s[round] = h.getValueAtPercentile(50);
      p99s[round] = h.getValueAtPercentile(99);
      // batch mean: no timer inside the loop
      means[round] = batchMean(s,
          () -> consume(Selector.select(view, request, scratch, Fixtures.CLOCK)));
      lookups[round] = Double.NaN;
      unmatched[round] = Double.NaN;
      if (policy.equals("kv")) {
        lookups[round] = batchMean(s, () -> {
          view.overlapSource().overlaps(view, hashes, c);
          sink += c.deviceOverlap(0);
        });
        unmatched[round] = batchMean(s, () -> {
          view.overlapSource().overlaps(view, unknown, c);
          sink += c.deviceOverlap(0);
        });
      }
    }
    double meanNs = median(means);
    double lookupNs = median(lookups);
    double unmatchedNs = median(unmatched);
    Row row = new Row(policy, workers, blocks, entries, meanNs, median(p50s), median(p99s), lookupNs, unmatchedNs,
        overlapSum, calls);
    Progress.line("growth", "%-15s %5d workers %5d blocks: mean %s ns, p50 %s ns, p99 %s ns%s", policy, workers,
        blocks, Report.ns(meanNs), Report.ns(row.p50Ns()), Report.ns(row.p99Ns()),
        Double.isNaN(lookupNs) ? "" : ", KV lookup " + Report.ns(lookupNs) + " ns");
    return row;
  }

  private static double median(double[] values) {
    double[] sorted = values.clone();
    java.util.Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static double batchMean(Settings s, Runnable op) {
    for (int k = 0; k < 256; k++) {
      op.run();
    }
    long calls = 0;
    long start = System.nanoTime();
    long end = start + s.measureMillis() * 1_000_000 / 2;
    long now;
    do {
      for (int k = 0; k < 64; k++) {
        op.run();
      }
      calls += 64;
      now = System.nanoTime();
    } while (now < end && calls < s.maxCalls());
    return (now - start) / (double) calls;
  }

  private static void consume(SelectionResult r) {
    sink += r.rank().dpRank() + r.overlapBlocks();
  }

  private static Path write(Path out, Settings s, List<Row> byWorkers, List<Row> byBlocks) {
    Report report = new Report("Inline Select cost vs workers and request length");
    report.paragraph(String.format("One thread calls `Selector.select` on a view built by `AdmissionState` over a "
        + "`ModelKvIndex` fed with Stored events: worker w holds a prefix of the request spread over 0–100 %% of it, "
        + "plus %d chains of its own. Each configuration is warmed up for %d ms, then measured in %d rounds, each "
        + "timed per call for ~%d ms (p50/p99, includes ~20 ns of `nanoTime`) and in batches for ~%d ms (mean); "
        + "every figure is the median over the rounds. \"KV lookup\" is "
        + "`overlaps(view, hashes, candidates)` alone, timed in batches; \"Σ overlap blocks\" is the sum over "
        + "candidates of the device overlap it reports (the blocks the per-candidate walk visits before the rank "
        + "drops out); \"unmatched lookup\" is the same call for a request of fresh hashes nobody holds (the fixed "
        + "cost per candidate); \"lookup ns per overlap block\" = (KV lookup − unmatched lookup) / "
        + "Σ overlap blocks.",
        s.background(), s.warmupMillis(), s.rounds(),
        s.measureMillis() / 2, s.measureMillis() / 2));
    report.heading("By worker count (requests of " + s.blocksForWorkers() + " blocks)");
    Report.Table t1 = new Report.Table("policy", "workers", "index entries", "mean ns/op", "p50 ns", "p99 ns",
        "mean ns per worker", "KV lookup ns", "unmatched lookup ns per worker", "Σ overlap blocks",
        "lookup ns per overlap block");
    for (Row r : byWorkers) {
      t1.row(r.policy(), r.workers(), r.entries(), Report.ns(r.meanNs()), Report.ns(r.p50Ns()), Report.ns(r.p99Ns()),
          Report.ns(r.meanNs() / r.workers()), Double.isNaN(r.lookupMeanNs()) ? "–" : Report.ns(r.lookupMeanNs()),
          r.unmatchedPerCandidate(), r.policy().equals("kv") ? r.overlapSum() : "–",
          r.lookupPerOverlapBlock());
    }
    report.table(t1);
    report.heading("kv by request length (" + s.workersForBlocks() + " workers)");
    Report.Table t2 = new Report.Table("blocks", "index entries", "mean ns/op", "p50 ns", "p99 ns",
        "mean ns per block", "KV lookup ns", "unmatched lookup ns per worker", "Σ overlap blocks",
        "lookup ns per overlap block");
    for (Row r : byBlocks) {
      t2.row(r.blocks(), r.entries(), Report.ns(r.meanNs()), Report.ns(r.p50Ns()), Report.ns(r.p99Ns()),
          Report.ns(r.meanNs() / r.blocks()), Report.ns(r.lookupMeanNs()), r.unmatchedPerCandidate(), r.overlapSum(),
          r.lookupPerOverlapBlock());
    }
    report.table(t2);
    return report.write(out, "growth.md");
  }
}
