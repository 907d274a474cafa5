package io.kvrouter.core.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.CandidatesForTests;
import io.kvrouter.core.testkit.LockedPicker;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Future;
import java.util.concurrent.Executors;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.CountDownLatch;
import java.util.List;
import java.util.ArrayList;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PickersTest {

  @Test
  void roundRobinCyclesThroughCandidates() {
    Picker picker = Pickers.create(Policy.ROUND_ROBIN, new PickerState(0, 0));
    Candidates c = CandidatesForTests.withCosts(0, 0, 0);
    assertThat(new int[] {picker.pick(c), picker.pick(c), picker.pick(c), picker.pick(c)})
        .containsExactly(0, 1, 2, 0);
    assertThat(picker.state().picks()).isEqualTo(4);
  }

  @Test
  void zeroTemperatureTiesSpreadUniformlyAcrossTiedCandidates() {
    Picker picker = Pickers.create(Policy.KV, 99);
    Candidates c = CandidatesForTests.withCosts(5, 3, 3, 9, 3);
    int[] counts = new int[5];
    int picks = 30_000;
    for (int i = 0; i < picks; i++) {
      counts[picker.pick(c)]++;
    }
    assertThat(counts[0]).isZero();
    assertThat(counts[3]).isZero();
    for (int tied : new int[] {1, 2, 4}) {
      assertThat(counts[tied] / (double) picks).isCloseTo(1 / 3.0, within(0.02));
    }
  }

  /** Softmax over range-normalised costs at T = 0.5: p ∝ exp(-(c - min) / (range · T)). */
  @Test
  void softmaxFrequenciesFollowTheExpectedProbabilities() {
    Picker picker = Pickers.create(Policy.KV, 1234);
    double[] costs = {10, 12, 14, 20};
    Candidates c = CandidatesForTests.withCosts(costs);
    CandidatesForTests.setTemperature(c, 0.5);
    double[] expected = new double[costs.length];
    double total = 0;
    for (int i = 0; i < costs.length; i++) {
      expected[i] = Math.exp(-(costs[i] - 10) / (10 * 0.5));
      total += expected[i];
    }
    int picks = 100_000;
    int[] counts = new int[costs.length];
    for (int i = 0; i < picks; i++) {
      counts[picker.pick(c)]++;
    }
    // binomial standard deviation at n = 100k is at most 0.0016: 0.01 is over 6 sigma
    for (int i = 0; i < costs.length; i++) {
      assertThat(counts[i] / (double) picks).as("candidate %d", i).isCloseTo(expected[i] / total, within(0.01));
    }
  }

  @Test
  void seededPicksAreStable() {
    Candidates c = CandidatesForTests.withCosts(1, 1, 1, 1);
    Picker first = Pickers.create(Policy.RANDOM, 5);
    Picker second = Pickers.create(Policy.RANDOM, 5);
    for (int i = 0; i < 100; i++) {
      assertThat(first.pick(c)).isEqualTo(second.pick(c));
    }
    assertThat(first.state()).isEqualTo(second.state());
  }

  @Test
  void powerOfTwoNeverPicksTheWorstOfTwoDistinctCosts() {
    Picker picker = Pickers.create(Policy.POWER_OF_TWO, 3);
    Candidates c = CandidatesForTests.withCosts(1, 100);
    for (int i = 0; i < 200; i++) {
      assertThat(picker.pick(c)).isZero();
    }
  }

  @Test
  void policyParametersValidateAndMerge() {
    PolicyConfig config = PolicyConfig.defaults().with("least_in_flight", Map.of("temperature", "0.3"));
    assertThat(config.policy()).isEqualTo(Policy.LEAST_IN_FLIGHT);
    assertThat(config.temperature()).isEqualTo(0.3);
    PolicyConfig reset = config.with("", Map.of("temperature", ""));
    assertThat(reset.policy()).isEqualTo(Policy.LEAST_IN_FLIGHT);
    assertThat(reset.temperature()).isZero();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> config.with(null, Map.of("temperature", "-1")))
        .hasMessageContaining("temperature");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> config.with(null, Map.of("bogus", "1")))
        .hasMessageContaining("bogus");
  }

  /**
   * A picker that is not thread-safe runs under its slot's lock: picks from four threads never overlap, and its
   * plain counter loses no increment. The picker itself detects overlapping entries.
   */
  @Test
  void aPickerThatIsNotThreadSafeNeverRunsConcurrentlyThroughItsSlot() throws Exception {
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger overlaps = new AtomicInteger();
    Picker stateful = new Picker() {
      private long picks;

      @Override
      public int pick(ScoredCandidates candidates) {
        if (inside.incrementAndGet() > 1) {
          overlaps.incrementAndGet();
        }
        long before = picks;
        for (int spin = 0; spin < 20; spin++) {
          Thread.onSpinWait(); // widen the window in which an unlocked caller would overlap
        }
        picks = before + 1;
        inside.decrementAndGet();
        return 0;
      }

      @Override
      public PickerState state() {
        return new PickerState(0, picks);
      }
    };
    PickerSlot slot = new PickerSlot(stateful);
    int threads = 4;
    int picksPerThread = 20_000;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      done.add(pool.submit(() -> {
        Candidates c = CandidatesForTests.withCosts(0, 0);
        start.await();
        for (int i = 0; i < picksPerThread; i++) {
          slot.pick(c);
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : done) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(overlaps.get()).isZero();
    assertThat(slot.state().picks()).isEqualTo((long) threads * picksPerThread);
  }

  @Test
  void builtInPickersDeclareThemselvesThreadSafe() {
    for (Policy policy : Policy.builtIns()) {
      assertThat(Pickers.create(policy, new PickerState(1, 0)).threadSafe()).as("%s", policy).isTrue();
    }
  }

  /** The locked and lock-free forms of a policy differ only in how the pick counter advances. */
  @Test
  void lockedAndLockFreePickersPickAlikeFromTheSameState() {
    Candidates c = CandidatesForTests.withCosts(3, 1, 1, 2, 1);
    for (Policy policy : Policy.builtIns()) {
      Picker lockFree = Pickers.create(policy, new PickerState(77, 5));
      Picker locked = new LockedPicker(policy, new PickerState(77, 5));
      for (int i = 0; i < 200; i++) {
        assertThat(lockFree.pick(c)).as("%s pick %d", policy, i).isEqualTo(locked.pick(c));
      }
      assertThat(lockFree.state()).isEqualTo(locked.state());
    }
  }

  /**
   * Lock-free random picks on two threads draw from different pick numbers (each thread claims its own chunk of the
   * counter), so the two threads' sequences differ and the state moves past both.
   */
  @Test
  void lockFreeThreadsDrawFromTheirOwnPickNumbers() throws Exception {
    Picker picker = Pickers.create(Policy.RANDOM, new PickerState(3, 0));
    int[][] picks = new int[2][Pickers.CHUNK];
    Thread[] threads = new Thread[2];
    for (int t = 0; t < threads.length; t++) {
      int[] mine = picks[t];
      threads[t] = new Thread(() -> {
        Candidates c = CandidatesForTests.withCosts(new double[1000]);
        for (int i = 0; i < mine.length; i++) {
          mine[i] = picker.pick(c);
        }
      });
      threads[t].start();
    }
    for (Thread thread : threads) {
      thread.join(30_000);
    }
    assertThat(picks[0]).isNotEqualTo(picks[1]);
    assertThat(picker.state().picks()).isEqualTo(2L * Pickers.CHUNK);
  }

  /**
   * One caller picking in order (the admission actor, which each message may run on another thread) gets the same
   * picks whichever threads ran them: the picks of one sequence spread over fresh threads equal one thread's, and
   * the state is exactly the picks made. The same sequence without in-order candidates on fresh threads takes a new
   * chunk per thread and picks otherwise.
   */
  @Test
  void aCallerPickingInOrderPicksAlikeWhateverThreadsRunIt() throws Exception {
    int picks = 3 * Pickers.CHUNK;
    double[] ties = new double[1000];
    Picker oneThread = Pickers.create(Policy.RANDOM, new PickerState(11, 0));
    Candidates alone = CandidatesForTests.inOrderWithCosts(ties);
    int[] expected = new int[picks];
    for (int i = 0; i < picks; i++) {
      expected[i] = oneThread.pick(alone);
    }
    Picker hopping = Pickers.create(Policy.RANDOM, new PickerState(11, 0));
    Picker hoppingByChunks = Pickers.create(Policy.RANDOM, new PickerState(11, 0));
    Candidates inOrder = CandidatesForTests.inOrderWithCosts(ties);
    Candidates byThread = CandidatesForTests.withCosts(ties);
    int[] hopped = new int[picks];
    int[] hoppedByChunks = new int[picks];
    for (int i = 0; i < picks; i++) {
      int at = i;
      // a fresh thread per pick, as a dispatcher may hand each message to another of its threads
      Thread thread = new Thread(() -> {
        hopped[at] = hopping.pick(inOrder);
        hoppedByChunks[at] = hoppingByChunks.pick(byThread);
      });
      thread.start();
      thread.join(30_000);
    }
    assertThat(hopped).isEqualTo(expected);
    assertThat(hopping.state()).isEqualTo(new PickerState(11, picks));
    assertThat(hoppedByChunks).isNotEqualTo(expected);
  }

  /** Concurrent round-robin picks without a lock still hand out every cursor value exactly once. */
  @Test
  void lockFreeRoundRobinSplitsExactlyAcrossThreads() throws Exception {
    PickerSlot slot = new PickerSlot(Policy.ROUND_ROBIN, new PickerState(0, 0));
    java.util.concurrent.atomic.AtomicIntegerArray counts = new java.util.concurrent.atomic.AtomicIntegerArray(4);
    Thread[] threads = new Thread[4];
    for (int t = 0; t < threads.length; t++) {
      threads[t] = new Thread(() -> {
        Candidates c = CandidatesForTests.withCosts(0, 0, 0, 0);
        for (int i = 0; i < 10_000; i++) {
          counts.incrementAndGet(slot.pick(c));
        }
      });
      threads[t].start();
    }
    for (Thread thread : threads) {
      thread.join(30_000);
    }
    for (int i = 0; i < 4; i++) {
      assertThat(counts.get(i)).isEqualTo(10_000);
    }
    assertThat(slot.state().picks()).isEqualTo(40_000);
  }
}
