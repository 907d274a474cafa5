package io.kvrouter.sim.workload;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The draws the Mooncake-format generators share, from one seeded random in a fixed order (a generator's trace is a
 * function of its seed): fresh block ids, documents picked by a Zipf popularity, chat sessions, and the entries'
 * lengths.
 */
final class TraceDraws {
  final SplittableRandom random;
  private long nextId;

  TraceDraws(long seed) {
    this.random = new SplittableRandom(seed);
  }

  /** {@code count} block ids never handed out before. */
  long[] freshIds(int count) {
    long[] ids = new long[count];
    for (int i = 0; i < count; i++) {
      ids[i] = nextId++;
    }
    return ids;
  }

  static long[] concat(long[] a, long[] b) {
    long[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** {@code count} documents of {@code minBlocks} to {@code maxBlocks} fresh blocks each. */
  long[][] documents(int count, int minBlocks, int maxBlocks) {
    long[][] documents = new long[count][];
    for (int d = 0; d < count; d++) {
      documents[d] = freshIds(minBlocks + random.nextInt(maxBlocks - minBlocks + 1));
    }
    return documents;
  }

  /** The cumulative Zipf({@code exponent}) popularity of {@code count} items, for {@link #pick}. */
  static double[] zipf(int count, double exponent) {
    double[] cumulative = new double[count];
    double total = 0;
    for (int d = 0; d < count; d++) {
      total += 1 / Math.pow(d + 1, exponent);
      cumulative[d] = total;
    }
    for (int d = 0; d < count; d++) {
      cumulative[d] /= total;
    }
    return cumulative;
  }

  /** An item drawn by its popularity ({@link #zipf}). */
  int pick(double[] cumulative) {
    int at = Arrays.binarySearch(cumulative, random.nextDouble());
    return Math.min(at >= 0 ? at + 1 : -at - 1, cumulative.length - 1);
  }

  /** An entry at {@code seconds} of prompt {@code ids}: its last block partial (1–512 tokens), 32–600 output tokens. */
  MooncakeTrace.Entry entry(double seconds, long[] ids) {
    int input = (ids.length - 1) * MooncakeTrace.BLOCK_TOKENS + 1 + random.nextInt(MooncakeTrace.BLOCK_TOKENS);
    return new MooncakeTrace.Entry(Math.round(seconds * 1000), input, 32 + random.nextInt(569), ids);
  }

  /**
   * A chat session starting at {@code start}, added to {@code entries} while they number fewer than {@code requests}:
   * up to 8 turns, each the previous prompt's ids plus 1–4 new blocks, the next 5–60 s later.
   */
  void session(List<MooncakeTrace.Entry> entries, double start, int requests) {
    long[] ids = new long[0];
    double at = start;
    int turns = 1 + random.nextInt(8);
    for (int turn = 0; turn < turns && entries.size() < requests; turn++) {
      ids = concat(ids, freshIds(1 + random.nextInt(4)));
      entries.add(entry(at, ids));
      at += 5 + random.nextDouble() * 55;
    }
  }
}
