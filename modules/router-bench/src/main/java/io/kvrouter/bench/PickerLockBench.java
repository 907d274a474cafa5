package io.kvrouter.bench;

import io.kvrouter.core.policy.PickerSlot;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.policy.Pickers;
import io.kvrouter.core.policy.Policy;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.policy.Picker;
import io.kvrouter.core.testkit.LockedPicker;
import io.kvrouter.core.testkit.Views;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Executor;
import org.HdrHistogram.AbstractHistogram;

/**
 * Inline selection at 256 callers from one view with a locked picker slot (the stateful shape: a plain counter under
 * the slot's lock) vs a lock-free one (the built-ins: an atomic pick counter), per policy.
 */
final class PickerLockBench {
  static final int CALLERS = 256;
  static final int KV_BLOCKS = 64;
  static final Policy[] POLICIES = {Policy.LEAST_IN_FLIGHT, Policy.KV, Policy.ROUND_ROBIN, Policy.RANDOM,
      Policy.POWER_OF_TWO};

  record Row(Policy policy, Callers.Result locked, Callers.Result lockFree, String lockedRange,
      String lockFreeRange) {}

  /** Selections per round: the advisory size × 5, so one round is not over in a few milliseconds. */
  static int selections(AdvisoryBench.Settings s) {
    return s.selections() * 5;
  }

  private PickerLockBench() {}

  static List<Row> run(Executor pool, AbstractHistogram[] latency, AdvisoryBench.Settings s) {
    List<Row> rows = new ArrayList<>();
    long[] hashes = Fixtures.chain(new SplittableRandom(42), KV_BLOCKS);
    SelectionRequest request = Fixtures.request(hashes, "lock-bench");
    for (Policy policy : POLICIES) {
      SelectionView base = Fixtures.kvState(s.workers(), policy.wireName(), hashes, 2, 11).view();
      PickerState start = new PickerState(7, 0);
      Picker lockedPicker = new LockedPicker(policy, start);
      Picker lockFreePicker = Pickers.create(policy, start);
      if (lockedPicker.threadSafe() || !lockFreePicker.threadSafe()) {
        throw new IllegalStateException("pickers are not of the expected kinds for " + policy);
      }
      SelectionView locked = Views.withPicker(base, new PickerSlot(lockedPicker));
      SelectionView lockFree = Views.withPicker(base, new PickerSlot(lockFreePicker));
      Callers.SyncCall onLocked = caller -> Selector.select(locked, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
      Callers.SyncCall onLockFree = caller -> Selector.select(lockFree, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
      int n = selections(s);
      for (int round = 0; round < s.warmupRounds(); round++) {
        Callers.runSync(pool, CALLERS, n, latency, s.capMillis(), onLocked);
        Callers.runSync(pool, CALLERS, n, latency, s.capMillis(), onLockFree);
      }
      List<Callers.Result> lockedRuns = new ArrayList<>();
      List<Callers.Result> lockFreeRuns = new ArrayList<>();
      for (int round = 0; round < s.rounds(); round++) {
        lockedRuns.add(AdvisoryBench.check(Callers.runSync(pool, CALLERS, n, latency, s.capMillis(), onLocked)));
        lockFreeRuns.add(AdvisoryBench.check(Callers.runSync(pool, CALLERS, n, latency, s.capMillis(), onLockFree)));
      }
      Callers.Result l = Callers.median(lockedRuns);
      Callers.Result f = Callers.median(lockFreeRuns);
      Progress.line("advisory", "%-15s locked %s calls/s (p99 %s µs), lock-free %s calls/s (p99 %s µs)",
          policy.wireName(), Report.rate(l.callsPerSecond()), Report.us(l.p99()), Report.rate(f.callsPerSecond()),
          Report.us(f.p99()));
      rows.add(new Row(policy, l, f, Callers.range(lockedRuns), Callers.range(lockFreeRuns)));
    }
    return rows;
  }

  static void describe(Report report, AdvisoryBench.Settings s, List<Row> rows) {
    report.heading("Locked vs lock-free picker slots, inline, " + CALLERS + " callers");
    report.paragraph(String.format(
        "Inline `Selector.select` from one view (%d workers, KV index populated, requests of %d blocks) whose "
            + "`PickerSlot` holds the `LockedPicker` test fixture (plain counter, picks under the slot's lock) or "
            + "`Pickers.create` (atomic counter, no lock); %d callers as tasks on %d threads, %,d selections per "
            + "round after %d warm-up rounds, %d measured rounds alternating the two slots (median round shown, "
            + "with the calls/s range).",
        s.workers(), KV_BLOCKS, CALLERS, s.threads(), selections(s), s.warmupRounds(), s.rounds()));
    Report.Table table = new Report.Table("policy", "locked p50 / p99 (µs)", "lock-free p50 / p99 (µs)",
        "calls/s locked → lock-free", "lock-free / locked", "calls/s range locked; lock-free");
    for (Row r : rows) {
      table.row(r.policy().wireName(), Report.us(r.locked().p50()) + " / " + Report.us(r.locked().p99()),
          Report.us(r.lockFree().p50()) + " / " + Report.us(r.lockFree().p99()),
          Report.rate(r.locked().callsPerSecond()) + " → " + Report.rate(r.lockFree().callsPerSecond()),
          Report.ratio(r.lockFree().callsPerSecond() / r.locked().callsPerSecond()),
          r.lockedRange() + "; " + r.lockFreeRange());
    }
    report.table(table);
  }
}
