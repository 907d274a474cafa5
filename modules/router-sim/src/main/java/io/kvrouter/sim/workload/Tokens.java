package io.kvrouter.sim.workload;

import java.util.SplittableRandom;

/** Deterministic synthetic token ids: the same key always yields the same tokens. */
public final class Tokens {
  /** Vocabulary size of Llama 3. */
  public static final int VOCABULARY = 128_256;

  private Tokens() {}

  /** {@code count} token ids drawn from a generator seeded by {@code key}. */
  public static int[] generate(long key, int count) {
    return generate(key, count, VOCABULARY);
  }

  /** {@code count} token ids below {@code vocabulary} drawn from a generator seeded by {@code key}. */
  public static int[] generate(long key, int count, int vocabulary) {
    SplittableRandom random = new SplittableRandom(mix(key));
    int[] tokens = new int[count];
    for (int i = 0; i < count; i++) {
      tokens[i] = random.nextInt(vocabulary);
    }
    return tokens;
  }

  /** A well-spread key from several parts (seed, session, turn, ...). */
  public static long key(long... parts) {
    long h = 0x9E3779B97F4A7C15L;
    for (long part : parts) {
      h = mix(h ^ part);
    }
    return h;
  }

  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
