package io.kvrouter.bench;

import io.kvrouter.core.policy.Picker;
import io.kvrouter.core.policy.PickerSlot;
import io.kvrouter.core.testkit.LockedPicker;
import io.kvrouter.core.testkit.TestPolicies;
import io.kvrouter.core.testkit.Views;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.policy.Pickers;
import io.kvrouter.core.policy.Policy;
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
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;

/**
 * JMH: inline Selects from one view shared by every benchmark thread, whose picker slot holds a locked picker (the
 * stateful shape: a plain counter under the slot's lock) or the lock-free built-in, per policy, at 1, 2 and 4 threads;
 * and, for kv, the two custom policies of router-core's test-jar registered through {@code META-INF/services} and
 * switched to by name (SetPolicy), one not thread-safe (under the slot's lock), one thread-safe (one atomic increment
 * per pick, no lock). {@link #run} writes {@code picker.md}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PickerLockBenchmark {
  static final int KV_BLOCKS = 64;

  @Param({"least_in_flight", "kv", "round_robin"})
  public String policy;

  @Param({"locked", "lock-free", "plugin-locked", "plugin-atomic"})
  public String slot;

  private SelectionView view;
  private SelectionRequest request;

  @Setup
  public void setUp() {
    long[] hashes = Fixtures.chain(new SplittableRandom(42), KV_BLOCKS);
    request = Fixtures.request(hashes, "lock-bench");
    if (slot.startsWith("plugin-")) {
      // a custom policy found by the registry, its picker made by its factory when the model switches to it
      String name = slot.equals("plugin-locked") ? TestPolicies.LOCKED : TestPolicies.ATOMIC;
      if (!policy.equals("kv") || Policy.fromWireName(name).newPicker(new PickerState(7, 0)).threadSafe()
          != slot.equals("plugin-atomic")) {
        throw new IllegalStateException("custom policy " + name + " does not fit " + policy + "/" + slot);
      }
      view = Fixtures.kvState(4, name, hashes, 2, 11).view();
      return;
    }
    Policy kind = Policy.fromWireName(policy);
    PickerState start = new PickerState(7, 0);
    Picker picker = slot.equals("locked") ? new LockedPicker(kind, start) : Pickers.create(kind, start);
    if (picker.threadSafe() != slot.equals("lock-free")) {
      throw new IllegalStateException("the picker is not " + slot);
    }
    view = Views.withPicker(Fixtures.kvState(4, policy, hashes, 2, 11).view(), new PickerSlot(picker));
  }

  private static double score(List<RunResult> results, String slot, int threads) {
    return results.stream().filter(r -> Jmh.param(r, "slot").equals(slot) && r.getParams().getThreads() == threads)
        .findFirst().orElseThrow().getPrimaryResult().getStatistics().getPercentile(50);
  }

  @Benchmark
  public SelectionResult select() {
    return Selector.select(view, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
  }

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    Jmh jmh = new Jmh(quick);
    Report report = new Report("Locked vs lock-free picker slots (JMH)");
    report.paragraph(String.format("`PickerLockBenchmark`: inline `Selector.select` from one view (4 workers, KV "
        + "index populated, requests of %d blocks) shared by every JMH thread, whose `PickerSlot` holds "
        + "the `LockedPicker` test fixture (plain counter, picks under the slot's lock) or `Pickers.create` (the lock-free "
        + "built-in: pick numbers claimed per thread in chunks; round-robin: one atomic increment per pick); for kv "
        + "also `plugin-locked` and `plugin-atomic`, the custom policies `%s` and `%s` of router-core's test-jar "
        + "(`TestPolicies`, registered through `META-INF/services`, the model switched to them by name): kv's cost "
        + "and picks, the first with a plain counter (not thread-safe: the slot's lock), the second with one atomic "
        + "increment per pick (thread-safe: no lock), so the two differ by the lock alone. %s. "
        + "Sample-time mode: the score is the mean of the sampled calls on each thread, p50 their median (a shared "
        + "host's stalls move the mean far more than the median).",
        KV_BLOCKS, TestPolicies.LOCKED, TestPolicies.ATOMIC, jmh.describe()));
    List<RunResult> results = new ArrayList<>();
    for (int threads : quick ? new int[] {4} : new int[] {1, 2, 4}) {
      results.addAll(jmh.run(jmh.options(PickerLockBenchmark.class.getName() + ".select$").threads(threads)
          .param("slot", "locked", "lock-free").build()));
      results.addAll(jmh.run(jmh.options(PickerLockBenchmark.class.getName() + ".select$").threads(threads)
          .param("policy", "kv").param("slot", "plugin-locked", "plugin-atomic").build()));
    }
    report.table(Jmh.table(results));
    report.paragraph("The lock's cost for a custom policy: the not-thread-safe plug-in (picks under the slot's lock) "
        + "against the thread-safe one (the same picks, no lock), per thread count, in this run, from the medians; "
        + "calls/s = threads × 10⁹ / p50:");
    Report.Table lock = new Report.Table("threads", "plugin-locked p50 (ns)", "plugin-atomic p50 (ns)",
        "locked / atomic", "plugin-locked calls/s", "plugin-atomic calls/s");
    for (int threads : quick ? new int[] {4} : new int[] {1, 2, 4}) {
      double locked = score(results, "plugin-locked", threads);
      double atomic = score(results, "plugin-atomic", threads);
      lock.row(threads, Report.ns(locked), Report.ns(atomic), String.format(java.util.Locale.ROOT, "%.2f",
          locked / atomic), String.format(java.util.Locale.ROOT, "%,.0f", threads * 1e9 / locked),
          String.format(java.util.Locale.ROOT, "%,.0f", threads * 1e9 / atomic));
    }
    report.table(lock);
    return List.of(report.write(out, "picker.md"));
  }
}
