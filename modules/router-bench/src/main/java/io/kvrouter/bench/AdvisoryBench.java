package io.kvrouter.bench;

import io.kvrouter.cluster.ModelClient;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.cluster.testkit.AdmissionProbes;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.testkit.Requests;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import org.HdrHistogram.AbstractHistogram;

/**
 * Advisory selection cost as in the Dynamo PR's table: the actor path ({@code AdmissionProbes.selectOnActor}) vs the
 * inline path ({@code selectWithoutAdmission}) from the same state on a real one-node cluster, 4 workers,
 * least_in_flight, 1 / 16 / 256 callers as tasks on a fixed pool of 4 threads.
 */
final class AdvisoryBench {
  record Settings(int workers, int threads, int selections, int warmupRounds, int rounds, int[] callers,
      long capMillis) {
    static Settings defaults(boolean quick) {
      return quick
          ? new Settings(4, 4, 2_000, 1, 1, new int[] {1, 16, 256}, 20_000)
          : new Settings(4, 4, 20_000, 5, 7, new int[] {1, 16, 256}, 60_000);
    }
  }

  /**
   * Per path: the median timed round (latency) and the median untimed round (calls/s), with the calls/s range of
   * the untimed rounds.
   */
  record Row(int callers, Callers.Result actor, Callers.Result inline, String actorRange, String inlineRange,
      Callers.Result actorUntimed, Callers.Result inlineUntimed) {
    double ratio() {
      return inlineUntimed.callsPerSecond() / actorUntimed.callsPerSecond();
    }

    double timedRatio() {
      return inline.callsPerSecond() / actor.callsPerSecond();
    }
  }

  private AdvisoryBench() {}

  static List<Path> run(Path out, boolean quick) {
    Settings s = Settings.defaults(quick);
    List<Row> rows = new ArrayList<>();
    List<PickerLockBench.Row> lockRows;
    ExecutorService pool = Fixtures.pool("caller", s.threads());
    AbstractHistogram[] latency = Latency.histograms(maxOf(s.callers()));
    try (BenchCluster cluster = BenchCluster.start("bench-advisory", false,
        AdmissionProbes.selectOnActor(Clock.SYSTEM))) {
      ModelClient queue = cluster.model(Fixtures.MODEL, s.workers(), "least_in_flight");
      SelectionRequest request = Requests.of(Fixtures.MODEL, "advisory", 512);
      Callers.SyncCall inline = caller -> queue.selectWithoutAdmission(request);
      Callers.AsyncCall actor = caller -> AdmissionProbes.selectOnActor(cluster.system, request, BenchCluster.TIMEOUT);
      for (int round = 1; round <= s.warmupRounds(); round++) {
        Progress.line("advisory", "warm-up round %d/%d", round, s.warmupRounds());
        for (int callers : s.callers()) {
          Callers.runChained(pool, callers, s.selections(), latency, s.capMillis(), actor);
          Callers.runSync(pool, callers, s.selections(), latency, s.capMillis(), inline);
        }
      }
      for (int callers : s.callers()) {
        List<Callers.Result> actorRuns = new ArrayList<>();
        List<Callers.Result> inlineRuns = new ArrayList<>();
        List<Callers.Result> actorUntimed = new ArrayList<>();
        List<Callers.Result> inlineUntimed = new ArrayList<>();
        for (int round = 0; round < s.rounds(); round++) {
          actorRuns.add(check(Callers.runChained(pool, callers, s.selections(), latency, s.capMillis(), actor)));
          inlineRuns.add(check(Callers.runSync(pool, callers, s.selections(), latency, s.capMillis(), inline)));
          actorUntimed.add(check(Callers.runChainedUntimed(pool, callers, s.selections(), s.capMillis(), actor)));
          inlineUntimed.add(check(Callers.runSyncUntimed(pool, callers, s.selections(), s.capMillis(), inline)));
        }
        Row row = new Row(callers, Callers.median(actorRuns), Callers.median(inlineRuns),
            Callers.range(actorUntimed), Callers.range(inlineUntimed), Callers.median(actorUntimed),
            Callers.median(inlineUntimed));
        Progress.line("advisory", "%3d callers: actor %s calls/s (p50 %s µs), inline %s calls/s (p99 %s µs): %s",
            callers, Report.rate(row.actorUntimed().callsPerSecond()), Report.us(row.actor().p50()),
            Report.rate(row.inlineUntimed().callsPerSecond()), Report.us(row.inline().p99()),
            Report.ratio(row.ratio()));
        rows.add(row);
      }
      lockRows = PickerLockBench.run(pool, latency, s);
    } finally {
      pool.shutdownNow();
    }
    return write(out, s, rows, lockRows);
  }

  static Callers.Result check(Callers.Result r) {
    if (r.failures() > 0) {
      throw new IllegalStateException(r.failures() + " of " + r.calls() + " calls failed");
    }
    return r;
  }

  private static int maxOf(int[] values) {
    int max = 1;
    for (int v : values) {
      max = Math.max(max, v);
    }
    return max;
  }

  private static List<Path> write(Path out, Settings s, List<Row> rows, List<PickerLockBench.Row> lockRows) {
    Report report = new Report("Advisory selection cost: actor vs inline");
    report.paragraph(String.format(
        "%d workers, least_in_flight (lock-free built-in picker), %,d selections per configuration and round, "
            + "after %d warm-up rounds; %d measured rounds per configuration, alternating the two paths: each cell "
            + "is the round with the median calls/s, with the range of calls/s over all rounds. Callers are tasks on a "
            + "fixed pool of %d threads (an inline caller loops its share; an actor caller chains each ask from the "
            + "previous completion, back on the pool through an explicit executor). Each round runs every path "
            + "twice: a timed pass (the clock read around every call, into an HdrHistogram: latency from the "
            + "caller's side) and an untimed pass (no clock read per call: calls/s = calls over wall time). On this "
            + "virtual machine a clock read costs 20–40 ns, a tenth of an inline Select, so the timed pass "
            + "understates the inline path's calls/s; both passes' calls/s are shown. Real one-node cluster on "
            + "loopback; the actor path's asks go straight to the local admission actor, as the router's do.",
        s.workers(), s.selections(), s.warmupRounds(), s.rounds(), s.threads()));
    Report.Table table = new Report.Table("callers", "actor p50 / p99 (µs)", "inline p50 / p99 (µs)",
        "calls/s actor → inline (untimed)", "inline / actor", "calls/s range actor; inline (untimed)",
        "timed pass: calls/s actor → inline, ratio");
    for (Row r : rows) {
      table.row(r.callers(), Report.us(r.actor().p50()) + " / " + Report.us(r.actor().p99()),
          Report.us(r.inline().p50()) + " / " + Report.us(r.inline().p99()),
          Report.rate(r.actorUntimed().callsPerSecond()) + " → " + Report.rate(r.inlineUntimed().callsPerSecond()),
          Report.ratio(r.ratio()), r.actorRange() + "; " + r.inlineRange(),
          Report.rate(r.actor().callsPerSecond()) + " → " + Report.rate(r.inline().callsPerSecond()) + ", "
              + Report.ratio(r.timedRatio()));
    }
    report.table(table);
    Report.Table targets = new Report.Table("target", "measured", "verdict");
    for (Row r : rows) {
      if (r.callers() == 16 || r.callers() == 256) {
        double ratio = r.ratio();
        targets.row("inline ≥ 10× actor calls/s at " + r.callers() + " callers", Report.ratio(ratio),
            Report.verdict(ratio >= 10));
      }
      if (r.callers() == 256) {
        targets.row("inline p99 ≤ 2 µs at 256 callers (least_in_flight)", Report.us(r.inline().p99()) + " µs",
            Report.verdict(r.inline().p99() <= 2000));
      }
    }
    report.table(targets);
    PickerLockBench.describe(report, s, lockRows);
    List<Path> files = new ArrayList<>();
    files.add(report.write(out, "advisory.md"));
    List<String> groups = new ArrayList<>();
    double[] actor = new double[rows.size()];
    double[] inline = new double[rows.size()];
    for (int k = 0; k < rows.size(); k++) {
      groups.add(rows.get(k).callers() + (rows.get(k).callers() == 1 ? " caller" : " callers"));
      actor[k] = rows.get(k).actorUntimed().callsPerSecond();
      inline[k] = rows.get(k).inlineUntimed().callsPerSecond();
    }
    files.add(Svg.groupedBars(out.resolve("advisory.svg"), "Advisory Select: calls/s, actor vs inline",
        "calls/s", groups, List.of(new Svg.Series("actor (ask)", "#d95f02", actor),
            new Svg.Series("inline", "#1b9e77", inline))));
    return files;
  }
}
