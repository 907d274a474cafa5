package io.kvrouter.sim.driver;

import java.util.Arrays;
import java.util.List;

/**
 * What one placement achieved on one workload run. Times are simulated microseconds. {@code served}: every request
 * that got its first token, with its workload tags, in the order the first tokens came. {@code sessionTurns}: requests
 * placed that follow an earlier placed turn of their session; {@code sessionTurnsKept}: those placed on the same rank
 * as that previous turn.
 */
public record RunResult(
    String label,
    long completed,
    long rejected,
    long promptTokens,
    long cachedTokens,
    long idealCachedTokens,
    long outputTokens,
    long[] ttftMicros,
    long[] endToEndMicros,
    long makespanMicros,
    long[] busyMicrosPerUnit,
    long[] servedPerUnit,
    long wallMillis,
    List<Served> served,
    long sessionTurns,
    long sessionTurnsKept) {

  /** A run whose session turns were not counted. */
  public RunResult(String label, long completed, long rejected, long promptTokens, long cachedTokens,
      long idealCachedTokens, long outputTokens, long[] ttftMicros, long[] endToEndMicros, long makespanMicros,
      long[] busyMicrosPerUnit, long[] servedPerUnit, long wallMillis, List<Served> served) {
    this(label, completed, rejected, promptTokens, cachedTokens, idealCachedTokens, outputTokens, ttftMicros,
        endToEndMicros, makespanMicros, busyMicrosPerUnit, servedPerUnit, wallMillis, served, 0, 0);
  }

  /** The session-affinity hit rate: of the turns after a session's first, the share placed where its last one was. */
  public double sessionKeptRate() {
    return sessionTurns == 0 ? 0 : (double) sessionTurnsKept / sessionTurns;
  }

  /** One request's first token: its tags and prompt, when it arrived and how long its first token took. */
  public record Served(String policyClass, int strictPriority, int promptTokens, long arrivalMicros,
      long ttftMicros) {}

  public double hitRate() {
    return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
  }

  /** The same requests, in the same order, against one infinite cache. */
  public double idealHitRate() {
    return promptTokens == 0 ? 0 : (double) idealCachedTokens / promptTokens;
  }

  public double meanTtftMillis() {
    return mean(ttftMicros) / 1000;
  }

  public double ttftMillis(double quantile) {
    return percentile(ttftMicros, quantile) / 1000;
  }

  public double meanEndToEndMillis() {
    return mean(endToEndMicros) / 1000;
  }

  public double endToEndMillis(double quantile) {
    return percentile(endToEndMicros, quantile) / 1000;
  }

  /** Output tokens per simulated second, first arrival to last completion. */
  public double outputTokensPerSecond() {
    return makespanMicros == 0 ? 0 : outputTokens * 1e6 / makespanMicros;
  }

  /** Busiest unit's busy time over the mean: 1 is perfect balance. */
  public double busyBalance() {
    return maxOverMean(busyMicrosPerUnit);
  }

  public double servedBalance() {
    return maxOverMean(servedPerUnit);
  }

  static double maxOverMean(long[] values) {
    double mean = Arrays.stream(values).average().orElse(0);
    return mean == 0 ? 0 : Arrays.stream(values).max().orElse(0) / mean;
  }

  private static double mean(long[] values) {
    return Arrays.stream(values).average().orElse(0);
  }

  /** Nearest-rank percentile of a sorted array. */
  private static double percentile(long[] sorted, double quantile) {
    if (sorted.length == 0) {
      return 0;
    }
    int rank = (int) Math.ceil(quantile * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }
}
