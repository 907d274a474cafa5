package io.kvrouter.sim.workload;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Generates a synthetic trace in the Mooncake format (the repository ships one, {@code traces/mooncake-sample.jsonl},
 * made by {@code bin/sim generate-trace}; no public trace is copied). Arrivals are Poisson; a request is one of:
 * <ul>
 *   <li>a turn of a chat session (30 %): the session's previous prompt ids plus 1–4 new blocks, the next turn 5–60 s
 *       later, up to 8 turns;</li>
 *   <li>a question on a shared document (40 %): one of 40 documents of 4–24 blocks, picked with a Zipf(1.1)
 *       popularity, followed by 1–4 blocks of its own;</li>
 *   <li>a one-off prompt (30 %) of 1–16 blocks nobody else shares.</li>
 * </ul>
 * The last block of every prompt is partial (1–512 tokens); output lengths are 32–600 tokens.
 */
public final class MooncakeSampleGenerator {
  private final SplittableRandom random;
  private long nextId;
  private final long[][] documents;
  private final double[] zipf;

  public MooncakeSampleGenerator(long seed) {
    this.random = new SplittableRandom(seed);
    this.documents = new long[40][];
    for (int d = 0; d < documents.length; d++) {
      documents[d] = freshIds(4 + random.nextInt(21));
    }
    this.zipf = new double[documents.length];
    double total = 0;
    for (int d = 0; d < zipf.length; d++) {
      total += 1 / Math.pow(d + 1, 1.1);
      zipf[d] = total;
    }
    for (int d = 0; d < zipf.length; d++) {
      zipf[d] /= total;
    }
  }

  /** {@code requests} entries arriving at {@code perSecond} on average, sorted by timestamp. */
  public List<MooncakeTrace.Entry> generate(int requests, double perSecond) {
    List<MooncakeTrace.Entry> entries = new ArrayList<>();
    double t = 0;
    while (entries.size() < requests) {
      t += -Math.log(1 - random.nextDouble()) / perSecond;
      double kind = random.nextDouble();
      if (kind < 0.3) {
        long[] ids = new long[0];
        double at = t;
        int turns = 1 + random.nextInt(8);
        for (int turn = 0; turn < turns && entries.size() < requests; turn++) {
          ids = concat(ids, freshIds(1 + random.nextInt(4)));
          entries.add(entry(at, ids));
          at += 5 + random.nextDouble() * 55;
        }
      } else if (kind < 0.7) {
        entries.add(entry(t, concat(documents[popularDocument()], freshIds(1 + random.nextInt(4)))));
      } else {
        entries.add(entry(t, freshIds(1 + random.nextInt(16))));
      }
    }
    entries.sort(Comparator.comparingLong(MooncakeTrace.Entry::timestampMillis));
    return entries;
  }

  private MooncakeTrace.Entry entry(double seconds, long[] ids) {
    int input = (ids.length - 1) * MooncakeTrace.BLOCK_TOKENS + 1 + random.nextInt(MooncakeTrace.BLOCK_TOKENS);
    return new MooncakeTrace.Entry(Math.round(seconds * 1000), input, 32 + random.nextInt(569), ids);
  }

  private int popularDocument() {
    double u = random.nextDouble();
    for (int d = 0; d < zipf.length; d++) {
      if (u < zipf[d]) {
        return d;
      }
    }
    return zipf.length - 1;
  }

  private long[] freshIds(int count) {
    long[] ids = new long[count];
    for (int i = 0; i < count; i++) {
      ids[i] = nextId++;
    }
    return ids;
  }

  private static long[] concat(long[] a, long[] b) {
    long[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
