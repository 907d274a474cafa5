package io.kvrouter.bench;

import io.kvrouter.cluster.admission.ModelClient;
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
 * least_in_flight, 1 / 16 / 256 callers as tasks on a fixed pool of 4 threads. Own harness ({@link Callers}): JMH
 * runs one caller per thread and cannot chain asks from completions.
 */
final class AdvisoryBench {
  /**
   * {@code selections}: calls per timed pass (the PR's 20,000); an untimed pass is {@code slices} slices of
   * {@code sliceMillis} per path, alternating, each bounded by {@code maxCalls}.
   */
  record Settings(int workers, int threads, int selections, int slices, long sliceMillis, long maxCalls,
      int warmupRounds, int rounds, int[] callers, long capMillis) {
    static Settings defaults(boolean quick) {
      return quick
          ? new Settings(4, 4, 2_000, 1, 20, 1_000_000, 1, 1, new int[] {1, 16, 256}, 20_000)
          : new Settings(4, 4, 20_000, 5, 50, 10_000_000, 5, 7, new int[] {1, 16, 256}, 60_000);
    }
  }

  /**
   * Per path: the median timed round (latency) and every untimed round (calls/s), in the order they ran: round r of
   * the actor ran right before round r of the inline path.
   */
  record Row(int callers, Callers.Result actor, Callers.Result inline, List<Callers.Result> actorUntimed,
      List<Callers.Result> inlineUntimed) {
    Callers.Result actorMedian() {
      return Callers.median(actorUntimed);
    }

    Callers.Result inlineMedian() {
      return Callers.median(inlineUntimed);
    }

    double ratio() {
      return inlineMedian().callsPerSecond() / actorMedian().callsPerSecond();
    }

    /** The lowest inline / actor ratio of one round's untimed passes. */
    double worstRoundRatio() {
      double worst = Double.MAX_VALUE;
      for (int r = 0; r < inlineUntimed.size(); r++) {
        worst = Math.min(worst, inlineUntimed.get(r).callsPerSecond() / actorUntimed.get(r).callsPerSecond());
      }
      return worst;
    }

    /** The same ratio per CPU-second the process spent: independent of the share of the machine each path got. */
    double perCpuRatio() {
      return actorMedian().cpuNanosPerCall() / inlineMedian().cpuNanosPerCall();
    }

    double timedRatio() {
      return inline.callsPerSecond() / actor.callsPerSecond();
    }
  }

  private AdvisoryBench() {}

  static List<Path> run(Path out, boolean quick) {
    Settings s = Settings.defaults(quick);
    List<Row> rows = new ArrayList<>();
    ExecutorService pool = Fixtures.pool("caller", s.threads());
    AbstractHistogram[] latency = Callers.histograms(maxOf(s.callers()));
    try (BenchCluster cluster = BenchCluster.start("bench-advisory", false,
        AdmissionProbes.selectOnActor(Clock.SYSTEM))) {
      ModelClient client = cluster.model(Fixtures.MODEL, s.workers(), "least_in_flight");
      SelectionRequest request = Requests.of(Fixtures.MODEL, "advisory", 512);
      Callers.SyncCall inline = caller -> client.selectWithoutAdmission(request);
      Callers.AsyncCall actor = caller -> AdmissionProbes.selectOnActor(cluster.system, request, BenchCluster.TIMEOUT);
      for (int round = 1; round <= s.warmupRounds(); round++) {
        Progress.line("advisory", "warm-up round %d/%d", round, s.warmupRounds());
        for (int callers : s.callers()) {
          Callers.runChained(pool, callers, s.selections(), latency, s.capMillis(), actor);
          Callers.runSync(pool, callers, s.selections(), latency, s.capMillis(), inline);
          Callers.runChainedFor(pool, callers, s.sliceMillis(), s.maxCalls(), actor);
          Callers.runSyncFor(pool, callers, s.selections(), s.sliceMillis(), s.maxCalls(), inline);
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
          // slices of the two paths alternate, so both see the same share of a machine whose load drifts
          Callers.Result a = null;
          Callers.Result i = null;
          for (int slice = 0; slice < s.slices(); slice++) {
            Callers.Result as = check(Callers.runChainedFor(pool, callers, s.sliceMillis(), s.maxCalls(), actor));
            Callers.Result is = check(
                Callers.runSyncFor(pool, callers, s.selections(), s.sliceMillis(), s.maxCalls(), inline));
            a = a == null ? as : a.plus(as);
            i = i == null ? is : i.plus(is);
          }
          actorUntimed.add(a);
          inlineUntimed.add(i);
        }
        Row row = new Row(callers, Callers.median(actorRuns), Callers.median(inlineRuns), actorUntimed,
            inlineUntimed);
        Progress.line("advisory", "%3d callers: actor %s calls/s (p50 %s µs), inline %s calls/s (p99 %s µs, "
                + "%s ns CPU per call, %.2f CPUs): %s, worst round %s", callers,
            Report.rate(row.actorMedian().callsPerSecond()), Report.us(row.actor().p50()),
            Report.rate(row.inlineMedian().callsPerSecond()), Report.us(row.inline().p99()),
            Report.ns(row.inlineMedian().cpuNanosPerCall()), row.inlineMedian().cores(), Report.ratio(row.ratio()),
            Report.ratio(row.worstRoundRatio()));
        rows.add(row);
      }
    } finally {
      pool.shutdownNow();
    }
    return write(out, s, rows);
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

  private static List<Path> write(Path out, Settings s, List<Row> rows) {
    Report report = new Report("Advisory selection cost: actor vs inline");
    report.paragraph(String.format(
        "%d workers, least_in_flight (lock-free built-in picker), after %d warm-up rounds; %d measured rounds per "
            + "caller count, alternating the two paths. Callers are tasks on a fixed pool of %d threads: an inline "
            + "caller makes its share of %,d calls per turn, then queues its next turn behind the other callers; an "
            + "actor caller chains each ask from the previous completion, back on the pool through an explicit "
            + "executor. Each round runs every path twice: a timed pass of %,d selections (the clock read around "
            + "every call, into an HdrHistogram: the latency columns) and an untimed pass of %d slices of %d ms, "
            + "the two paths' slices alternating (no clock read per call: calls/s = calls over wall time; a clock "
            + "read costs a fifth of an inline Select here). "
            + "calls/s is the median untimed round, with the range over all rounds; \"worst round\" is the lowest "
            + "inline / actor ratio of the untimed passes of one round. CPU ns per call and CPUs busy are "
            + "the whole process's CPU time (every thread: callers, actor, GC, JIT) over the calls and over the "
            + "wall time of the median untimed round; \"per CPU-second\" is the ratio of the CPU per call, what the "
            + "ratio of calls/s would be if both paths got the same share of the machine. Real one-node cluster on "
            + "loopback; the actor path's asks go straight to the local admission actor, as the router's do.",
        s.workers(), s.warmupRounds(), s.rounds(), s.threads(), s.selections(), s.selections(), s.slices(),
        s.sliceMillis()));
    Report.Table table = new Report.Table("callers", "actor p50 / p99 (µs)", "inline p50 / p99 (µs)",
        "calls/s actor → inline", "inline / actor", "worst round", "calls/s range actor; inline",
        "CPU ns per call actor; inline", "CPUs busy actor; inline", "inline / actor per CPU-second",
        "timed pass: calls/s actor → inline, ratio");
    for (Row r : rows) {
      Callers.Result a = r.actorMedian();
      Callers.Result i = r.inlineMedian();
      table.row(r.callers(), Report.us(r.actor().p50()) + " / " + Report.us(r.actor().p99()),
          Report.us(r.inline().p50()) + " / " + Report.us(r.inline().p99()),
          Report.rate(a.callsPerSecond()) + " → " + Report.rate(i.callsPerSecond()), Report.ratio(r.ratio()),
          Report.ratio(r.worstRoundRatio()),
          Callers.range(r.actorUntimed()) + "; " + Callers.range(r.inlineUntimed()),
          Report.ns(a.cpuNanosPerCall()) + "; " + Report.ns(i.cpuNanosPerCall()),
          String.format(java.util.Locale.ROOT, "%.2f; %.2f", a.cores(), i.cores()), Report.ratio(r.perCpuRatio()),
          Report.rate(r.actor().callsPerSecond()) + " → " + Report.rate(r.inline().callsPerSecond()) + ", "
              + Report.ratio(r.timedRatio()));
    }
    report.table(table);
    Report.Table targets = new Report.Table("target", "measured (median; worst round; per CPU-second)", "verdict");
    for (Row r : rows) {
      if (r.callers() == 16 || r.callers() == 256) {
        targets.row("inline ≥ 10× actor calls/s at " + r.callers() + " callers", Report.ratio(r.ratio()) + "; "
            + Report.ratio(r.worstRoundRatio()) + "; " + Report.ratio(r.perCpuRatio()),
            Report.verdict(r.ratio() >= 10));
      }
      if (r.callers() == 256) {
        targets.row("inline p99 ≤ 2 µs at 256 callers (least_in_flight)", Report.us(r.inline().p99()) + " µs",
            Report.verdict(r.inline().p99() <= 2000));
      }
    }
    report.table(targets);
    return List.of(report.write(out, "advisory.md"));
  }
}
