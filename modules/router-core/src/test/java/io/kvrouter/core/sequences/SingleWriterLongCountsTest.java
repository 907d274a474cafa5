package io.kvrouter.core.sequences;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class SingleWriterLongCountsTest {

  @Test
  void aKeyIsHeldUntilItsLastCountIsDropped() {
    SingleWriterLongCounts counts = new SingleWriterLongCounts();
    counts.increment(42);
    counts.increment(42);
    counts.decrement(42);
    assertThat(counts.contains(42)).isTrue();
    counts.decrement(42);
    assertThat(counts.contains(42)).isFalse();
    counts.decrement(42);
    counts.increment(42);
    assertThat(counts.contains(42)).as("a decrement of a key not held changes nothing").isTrue();
    assertThat(counts.size()).isEqualTo(1);
  }

  @Test
  void theKeyZeroIsCountedLikeAnyOther() {
    SingleWriterLongCounts counts = new SingleWriterLongCounts();
    assertThat(counts.contains(0)).isFalse();
    counts.increment(0);
    counts.increment(0);
    counts.decrement(0);
    assertThat(counts.contains(0)).isTrue();
    assertThat(counts.size()).isEqualTo(1);
    counts.decrement(0);
    counts.decrement(0);
    assertThat(counts.contains(0)).isFalse();
    counts.increment(0);
    assertThat(counts.contains(0)).as("an extra decrement left no negative count").isTrue();
  }

  @Test
  void randomChangesThroughGrowthAndShrinkingMatchAMap() {
    SingleWriterLongCounts counts = new SingleWriterLongCounts();
    Map<Long, Integer> expected = new HashMap<>();
    SplittableRandom random = new SplittableRandom(7);
    // a small universe so chains collide, grow to thousands of keys and shrink back
    for (int round = 0; round < 6; round++) {
      int universe = round % 2 == 0 ? 4_000 : 40;
      for (int op = 0; op < 60_000; op++) {
        long key = random.nextInt(universe) - 20;
        boolean add = round % 2 == 0 ? random.nextInt(3) > 0 : random.nextInt(3) == 0;
        if (add) {
          counts.increment(key);
          expected.merge(key, 1, Integer::sum);
        } else {
          counts.decrement(key);
          expected.computeIfPresent(key, (k, c) -> c > 1 ? c - 1 : null);
        }
      }
      for (long key = -20; key < 4_000; key++) {
        assertThat(counts.contains(key)).as("key %d after round %d", key, round)
            .isEqualTo(expected.containsKey(key));
      }
      assertThat(counts.size()).isEqualTo(expected.size());
    }
  }

  @Test
  void aConcurrentProbeNeverReportsAKeyThatWasNeverAdded() throws InterruptedException {
    SingleWriterLongCounts counts = new SingleWriterLongCounts();
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong falsePositives = new AtomicLong();
    AtomicLong probes = new AtomicLong();
    Thread reader = new Thread(() -> {
      SplittableRandom random = new SplittableRandom(11);
      while (!done.get()) {
        long never = random.nextLong() | 1L; // the writer only adds even keys
        if (counts.contains(never)) {
          falsePositives.incrementAndGet();
        }
        probes.incrementAndGet();
      }
    });
    reader.start();
    SplittableRandom random = new SplittableRandom(13);
    long[] live = new long[2_048];
    long deadline = System.nanoTime() + 5_000_000_000L;
    // bounded in count and time: grow, churn and shrink the table under the probes
    for (int round = 0; round < 200 && System.nanoTime() < deadline; round++) {
      for (int i = 0; i < live.length; i++) {
        live[i] = random.nextLong() & ~1L;
        counts.increment(live[i]);
      }
      for (long key : live) {
        counts.decrement(key);
      }
    }
    done.set(true);
    reader.join(10_000);
    assertThat(probes.get()).isPositive();
    assertThat(falsePositives.get()).isZero();
    assertThat(counts.size()).isZero();
  }
}
