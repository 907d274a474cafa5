package io.kvrouter.core.policy;

/**
 * A tiny RNG whose whole state is one long, so a picker can be saved and restored exactly (the parity tests restore
 * two pickers from the same state). Not thread-safe: pickers use it under their lock.
 */
final class SplitMix64 {
  private long state;

  SplitMix64(long state) {
    this.state = state;
  }

  long state() {
    return state;
  }

  long nextLong() {
    long z = (state += 0x9E3779B97F4A7C15L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Uniform in [0, bound). */
  int nextInt(int bound) {
    return (int) (((nextLong() >>> 32) * bound) >>> 32);
  }

  /** Uniform in [0, 1). */
  double nextDouble() {
    return (nextLong() >>> 11) * 0x1.0p-53;
  }
}
