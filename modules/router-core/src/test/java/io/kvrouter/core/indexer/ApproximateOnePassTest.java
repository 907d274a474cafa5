package io.kvrouter.core.indexer;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.model.Rank;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The selection path fills every approximate candidate's depth from one pass down the path (plus one expiry check
 * each); the per-rank diagnostic {@link ModelKvIndex#overlap} binary-searches each rank on its own. Over random
 * routes of shared and diverging prefixes, refreshed and aging at random, pruned by size and expired, both agree.
 */
class ApproximateOnePassTest {
  private static final int RANKS = 12;

  @Test
  void onePassDepthsEqualPerRankSearchesUnderRoutesExpiryAndPruning() {
    SplittableRandom random = new SplittableRandom(42);
    for (int trial = 0; trial < 40; trial++) {
      AtomicLong clock = new AtomicLong(1_000_000L);
      long ttl = 1_000;
      ModelKvIndex index = new ModelKvIndex(ttl, 200 + random.nextInt(400), 0.8, clock::get);
      Map<String, Integer> workers = new LinkedHashMap<>();
      for (int w = 0; w < RANKS / 2; w++) {
        workers.put("w" + w, 2);
      }
      ViewFixture fixture = new ViewFixture(index, workers);
      long[][] prompts = new long[4][];
      for (int p = 0; p < prompts.length; p++) {
        prompts[p] = chain(random, p == 0 ? null : prompts[random.nextInt(p)], 40);
      }
      for (int step = 0; step < 60; step++) {
        Rank rank = new Rank("w" + random.nextInt(RANKS / 2), random.nextInt(2));
        long[] prompt = prompts[random.nextInt(prompts.length)];
        index.recordRouted(rank, Arrays.copyOf(prompt, 1 + random.nextInt(prompt.length)), clock.get());
        clock.addAndGet(random.nextInt(60));
        if (random.nextInt(10) == 0) {
          index.expire(clock.get());
        }
        long[] request = prompts[random.nextInt(prompts.length)];
        Map<Rank, TieredOverlap> onePass = fixture.overlaps(request);
        for (Map.Entry<Rank, TieredOverlap> e : onePass.entrySet()) {
          assertThat(e.getValue())
              .as("trial %d step %d rank %s", trial, step, e.getKey())
              .isEqualTo(index.overlap(e.getKey(), request, clock.get()));
        }
      }
    }
  }

  /** 40 sequence hashes; the first {@code shared} of them taken from {@code parent} when given. */
  private static long[] chain(SplittableRandom random, long[] parent, int length) {
    long[] out = new long[length];
    int shared = parent == null ? 0 : random.nextInt(length);
    for (int i = 0; i < length; i++) {
      out[i] = i < shared ? parent[i] : random.nextLong();
    }
    return out;
  }
}
