package io.kvrouter.bench;

import org.HdrHistogram.AbstractHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.IntCountsHistogram;

/** Latency histograms in nanoseconds (1 ns … 30 s, 3 significant digits). */
final class Latency {
  private Latency() {}

  static final long MAX_NANOS = 30_000_000_000L;

  static AbstractHistogram histogram() {
    return new IntCountsHistogram(1, MAX_NANOS, 3);
  }

  static AbstractHistogram[] histograms(int count) {
    AbstractHistogram[] out = new AbstractHistogram[count];
    for (int i = 0; i < count; i++) {
      out[i] = histogram();
    }
    return out;
  }

  static void record(AbstractHistogram h, long nanos) {
    h.recordValue(Math.max(1, Math.min(MAX_NANOS, nanos)));
  }

  /** Merges the first {@code count} histograms into a new one (which can count past int limits). */
  static AbstractHistogram merge(AbstractHistogram[] parts, int count) {
    AbstractHistogram total = new Histogram(1, MAX_NANOS, 3);
    for (int i = 0; i < count; i++) {
      total.add(parts[i]);
    }
    return total;
  }
}
