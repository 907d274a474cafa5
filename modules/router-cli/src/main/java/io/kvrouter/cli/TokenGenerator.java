package io.kvrouter.cli;

/**
 * Deterministic pseudo-random token ids for trying prefix caching: the same seed always yields the same sequence,
 * and a longer count extends a shorter one (the first N ids of {@code generate(seed, M)} for M &gt; N equal
 * {@code generate(seed, N)}), so two prompts with one seed share a prefix. The generator is SplitMix64, written out
 * here so the ids never depend on the JDK's Random implementations.
 */
public final class TokenGenerator {

  /** Roughly a Llama-2 vocabulary; ids fall in [0, vocabSize). */
  public static final int DEFAULT_VOCAB_SIZE = 32_000;

  private TokenGenerator() {}

  public static int[] generate(long seed, int count) {
    return generate(seed, count, DEFAULT_VOCAB_SIZE);
  }

  public static int[] generate(long seed, int count, int vocabSize) {
    if (count < 0) {
      throw new IllegalArgumentException("token count must be >= 0, got " + count);
    }
    if (vocabSize < 1) {
      throw new IllegalArgumentException("vocabulary size must be >= 1, got " + vocabSize);
    }
    int[] out = new int[count];
    long state = seed;
    for (int i = 0; i < count; i++) {
      state += 0x9E3779B97F4A7C15L;
      long z = state;
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      z = z ^ (z >>> 31);
      out[i] = (int) Long.remainderUnsigned(z, vocabSize);
    }
    return out;
  }
}
