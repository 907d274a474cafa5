package io.kvrouter.bench;

import io.kvrouter.core.policy.Picker;
import io.kvrouter.core.policy.PickerSlot;
import io.kvrouter.core.testkit.LockedPicker;
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
 * stateful shape: a plain counter under the slot's lock) or the lock-free built-in, per policy, at 1, 2 and 4 threads.
 * {@link #run} writes {@code picker.md}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PickerLockBenchmark {
  static final int KV_BLOCKS = 64;

  @Param({"least_in_flight", "kv", "round_robin"})
  public String policy;

  @Param({"locked", "lock-free"})
  public String slot;

  private SelectionView view;
  private SelectionRequest request;

  @Setup
  public void setUp() {
    long[] hashes = Fixtures.chain(new SplittableRandom(42), KV_BLOCKS);
    request = Fixtures.request(hashes, "lock-bench");
    Policy kind = Policy.fromWireName(policy);
    PickerState start = new PickerState(7, 0);
    Picker picker = slot.equals("locked") ? new LockedPicker(kind, start) : Pickers.create(kind, start);
    if (picker.threadSafe() != slot.equals("lock-free")) {
      throw new IllegalStateException("the picker is not " + slot);
    }
    view = Views.withPicker(Fixtures.kvState(4, policy, hashes, 2, 11).view(), new PickerSlot(picker));
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
        + "built-in: pick numbers claimed per thread in chunks; round-robin: one atomic increment per pick). %s. "
        + "The score is JMH's average time per call on each thread: calls/s = threads × 10⁹ / score.",
        KV_BLOCKS, jmh.describe()));
    List<RunResult> results = new ArrayList<>();
    for (int threads : quick ? new int[] {4} : new int[] {1, 2, 4}) {
      results.addAll(jmh.run(jmh.options(PickerLockBenchmark.class.getName() + ".select$").threads(threads)
          .build()));
    }
    report.table(Jmh.table(results));
    return List.of(report.write(out, "picker.md"));
  }
}
