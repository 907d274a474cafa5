package io.kvrouter.core.indexer;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Lock-free readers against one writer. Readers run the selection-path lookup while the writer stores, removes,
 * clears, removes workers, records routed requests and expires them. The invariant checked on every read: a rank's
 * reported overlap never exceeds the deepest prefix of that query ever stored (or routed) for it — the writer raises
 * that bound before it publishes anything — and no lookup throws. Bounded to about 1.5 s.
 */
class KvIndexConcurrencyTest {
  static final int PROMPTS = 6;
  static final int LENGTH = 24;
  static final int SHARED = 8;
  static final List<Rank> RANKS = List.of(new Rank("w0", 0), new Rank("w0", 1), new Rank("w1", 0), new Rank("w2", 0));
  static final int APPROXIMATE_RANK = 3;

  /** Prompts share their first {@link #SHARED} blocks, then diverge. */
  static long hash(int prompt, int depth) {
    long h = depth < SHARED ? 0x1111L * (depth + 1) : (prompt + 1) * 0x10_0000L + depth;
    return h * 0x9E3779B97F4A7C15L;
  }

  static long[] prompt(int p, int length) {
    long[] out = new long[length];
    for (int i = 0; i < length; i++) {
      out[i] = hash(p, i);
    }
    return out;
  }

  static long blockHash(int rank, long tokensHash) {
    return tokensHash ^ (0xA5A5L << 20) * (rank + 1);
  }

  static int common(int p, int q) {
    return p == q ? LENGTH : SHARED;
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void readersNeverSeeMoreThanWasEverStored() throws Exception {
    AtomicLong clock = new AtomicLong(1_000_000);
    ModelKvIndex index = new ModelKvIndex(60_000, 5_000, 0.8, clock::get);
    ViewFixture fixture = new ViewFixture(index, ViewFixture.workers("w0", 2, "w1", 1, "w2", 1));
    // maxDepth[rank * PROMPTS + prompt]: the deepest prefix of the prompt ever stored or routed for the rank.
    AtomicIntegerArray maxDepth = new AtomicIntegerArray(RANKS.size() * PROMPTS);
    AtomicBoolean done = new AtomicBoolean();
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    AtomicLong lookups = new AtomicLong();
    AtomicLong nonZero = new AtomicLong();
    CountDownLatch start = new CountDownLatch(1);

    List<Thread> readers = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      long seed = 17 + t;
      readers.add(new Thread(() -> {
        SplittableRandom rnd = new SplittableRandom(seed);
        Candidates scratch = new Candidates();
        try {
          start.await();
          while (!done.get()) {
            int p = rnd.nextInt(PROMPTS);
            int length = 1 + rnd.nextInt(LENGTH + 4);
            long[] query = Arrays.copyOf(prompt(p, Math.min(length, LENGTH)), length);
            int diverge = Math.min(length, LENGTH);
            for (int i = LENGTH; i < length; i++) {
              query[i] = 0xDEAD0000L + i; // never stored
            }
            if (rnd.nextInt(4) == 0 && diverge > 1) {
              diverge = rnd.nextInt(diverge);
              query[diverge] = 0xBEEF0000L + diverge;
            }
            Map<Rank, TieredOverlap> got = fixture.overlaps(query, scratch);
            lookups.incrementAndGet();
            for (int r = 0; r < RANKS.size(); r++) {
              TieredOverlap o = got.get(RANKS.get(r));
              int bound = Math.min(diverge, maxDepth.get(r * PROMPTS + p));
              if (o.device() < 0 || o.hostBeyondDevice() < 0 || o.diskBeyondDevice() < 0 || o.total() > bound) {
                throw new AssertionError("rank " + RANKS.get(r) + " prompt " + p + " query length " + length
                    + " diverging at " + diverge + ": " + o + " exceeds bound " + bound);
              }
              if (r == APPROXIMATE_RANK && (o.hostBeyondDevice() != 0 || o.diskBeyondDevice() != 0)) {
                throw new AssertionError("approximate overlaps are device-only: " + o);
              }
              if (o.total() > 0) {
                nonZero.incrementAndGet();
              }
            }
          }
        } catch (Throwable e) {
          failures.add(e);
        }
      }, "reader-" + t));
    }
    readers.forEach(Thread::start);

    SplittableRandom rnd = new SplittableRandom(42);
    long[] eventIds = new long[RANKS.size()];
    start.countDown();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1500);
    int ops = 0;
    try {
      while (System.nanoTime() < deadline && ops < 2_000_000 && failures.isEmpty()) {
        ops++;
        int r = rnd.nextInt(RANKS.size());
        Rank rank = RANKS.get(r);
        int p = rnd.nextInt(PROMPTS);
        if (r == APPROXIMATE_RANK) {
          int length = 1 + rnd.nextInt(LENGTH);
          raise(maxDepth, r, p, length);
          long now = clock.addAndGet(rnd.nextInt(200));
          index.recordRouted(rank, prompt(p, length), now);
          if (rnd.nextInt(50) == 0) {
            index.expire(now);
          }
          continue;
        }
        int dice = rnd.nextInt(100);
        KvEvent event;
        if (dice < 60) {
          int from = rnd.nextInt(LENGTH);
          int to = Math.min(LENGTH, from + 1 + rnd.nextInt(6));
          long[] tokens = Arrays.copyOfRange(prompt(p, LENGTH), from, to);
          long[] blocks = Arrays.stream(tokens).map(h -> blockHash(r, h)).toArray();
          Long parent = from == 0 ? null : blockHash(r, hash(p, from - 1));
          raise(maxDepth, r, p, to);
          event = new KvEvent.Stored(StorageTier.values()[rnd.nextInt(3)], parent, blocks, tokens);
        } else if (dice < 95) {
          long[] blocks = new long[1 + rnd.nextInt(3)];
          for (int i = 0; i < blocks.length; i++) {
            blocks[i] = blockHash(r, hash(p, rnd.nextInt(LENGTH)));
          }
          event = new KvEvent.Removed(StorageTier.values()[rnd.nextInt(3)], blocks);
        } else if (dice < 98) {
          event = KvEvent.Cleared.INSTANCE;
        } else {
          index.removeWorker(rank.workerId());
          for (int k = 0; k < RANKS.size(); k++) {
            if (RANKS.get(k).workerId().equals(rank.workerId())) {
              eventIds[k] = 0;
            }
          }
          continue;
        }
        // Now and then skip an id: the gap clears the rank, which must be just as safe for readers.
        eventIds[r] += rnd.nextInt(200) == 0 ? 2 : 1;
        index.apply(rank, eventIds[r], event);
      }
    } finally {
      done.set(true);
      for (Thread reader : readers) {
        reader.join(10_000);
      }
    }

    assertThat(failures).isEmpty();
    assertThat(ops).isGreaterThan(1000);
    assertThat(lookups.get()).isGreaterThan(1000);
    assertThat(nonZero.get()).as("the readers saw cached prefixes at all").isGreaterThan(100);
  }

  /** Raises the bound for prompt p and, through the shared prefix, for every other prompt. */
  private static void raise(AtomicIntegerArray maxDepth, int rank, int p, int depth) {
    for (int q = 0; q < PROMPTS; q++) {
      int d = Math.min(depth, common(p, q));
      int slot = rank * PROMPTS + q;
      maxDepth.accumulateAndGet(slot, d, Math::max);
    }
  }
}
