package io.kvrouter.bench;

import java.util.Locale;

/** Progress lines on stderr, so a long run shows where it is. */
final class Progress {
  private static final long START = System.nanoTime();

  private Progress() {}

  static void line(String bench, String format, Object... args) {
    double seconds = (System.nanoTime() - START) / 1e9;
    System.err.printf(Locale.ROOT, "[%7.1fs] %-9s %s%n", seconds, bench, String.format(Locale.ROOT, format, args));
    System.err.flush();
  }
}
