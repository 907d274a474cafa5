package io.kvrouter.sim.report;

import io.kvrouter.sim.driver.RunResult;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** The comparison as a Markdown table (with the run's context) and the targets of the routing-quality benchmark. */
public final class Report {
  /** Where the table came from: shown above it. */
  public record Context(String title, String date, String command, String mode, String fleet, String workload) {}

  private Report() {}

  public static String markdown(Context context, List<RunResult> results) {
    StringBuilder md = new StringBuilder();
    md.append("## ").append(context.title()).append("\n\n");
    md.append("- date: ").append(context.date()).append("\n");
    md.append("- command: `").append(context.command()).append("`\n");
    md.append("- mode: ").append(context.mode()).append("\n");
    md.append("- fleet: ").append(context.fleet()).append("\n");
    md.append("- workload: ").append(context.workload()).append("\n\n");
    md.append(table(results));
    md.append("\n").append(targets(results));
    if (results.stream().anyMatch(r -> r.label().contains("+ sessions"))) {
      md.append("\n").append(sessions(results));
    }
    return md.toString();
  }

  /**
   * The session-affinity hit rate of every row: of the turns after a session's first, the share placed on the rank
   * its previous turn went to (rows marked "+ sessions" send each turn's session id; the others route by the prompt
   * alone).
   */
  public static String sessions(List<RunResult> results) {
    StringBuilder md = new StringBuilder();
    md.append("| placement | session turns | on the previous turn's rank | hit rate | TTFT mean ms | busy max/mean |\n");
    md.append("|---|---:|---:|---:|---:|---:|\n");
    for (RunResult r : results) {
      md.append(String.format(Locale.ROOT, "| %s | %d | %.1f %% | %.1f %% | %.1f | %.2f |%n", r.label(),
          r.sessionTurns(), 100 * r.sessionKeptRate(), 100 * r.hitRate(), r.meanTtftMillis(), r.busyBalance()));
    }
    return md.toString();
  }

  /** The table alone: one row per contender, then the ideal. */
  public static String table(List<RunResult> results) {
    StringBuilder md = new StringBuilder();
    md.append("| placement | hit rate | of ideal | TTFT p50 ms | TTFT p99 ms | TTFT mean ms | E2E mean s "
        + "| E2E p99 s | output tok/s | busy max/mean | served max/mean | requests | rejected |\n");
    md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (RunResult r : results) {
      md.append(String.format(Locale.ROOT,
          "| %s | %.1f %% | %.0f %% | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f | %.2f | %.2f | %d | %d |%n",
          r.label(), 100 * r.hitRate(), r.idealHitRate() == 0 ? 0 : 100 * r.hitRate() / r.idealHitRate(),
          r.ttftMillis(0.5), r.ttftMillis(0.99), r.meanTtftMillis(), r.meanEndToEndMillis() / 1000,
          r.endToEndMillis(0.99) / 1000, r.outputTokensPerSecond(), r.busyBalance(), r.servedBalance(),
          r.completed(), r.rejected()));
    }
    if (!results.isEmpty()) {
      md.append(String.format(Locale.ROOT,
          "| ideal (one infinite cache, no router) | %.1f %% | 100 %% | | | | | | | | | | |%n",
          100 * results.get(0).idealHitRate()));
    }
    return md.toString();
  }

  /** kv against round_robin and prefix-greedy, as the benchmark's targets state them. */
  public static String targets(List<RunResult> results) {
    Optional<RunResult> kv = find(results, "kv");
    Optional<RunResult> roundRobin = find(results, "round_robin");
    Optional<RunResult> greedy = results.stream().filter(r -> r.label().startsWith("prefix-greedy")).findFirst();
    StringBuilder out = new StringBuilder();
    if (kv.isPresent() && roundRobin.isPresent()) {
      RunResult k = kv.get();
      RunResult rr = roundRobin.get();
      out.append(String.format(Locale.ROOT,
          "- kv vs round_robin: %.2fx the hit rate (target >= 3x), %.2fx the mean TTFT (target <= 0.5x); "
              + "kv balance %.2f busy max/mean (target <= 1.5, goal <= 1.1)%n",
          rr.hitRate() == 0 ? Double.POSITIVE_INFINITY : k.hitRate() / rr.hitRate(),
          rr.meanTtftMillis() == 0 ? 0 : k.meanTtftMillis() / rr.meanTtftMillis(), k.busyBalance()));
    }
    if (kv.isPresent() && greedy.isPresent()) {
      RunResult k = kv.get();
      RunResult g = greedy.get();
      out.append(String.format(Locale.ROOT,
          "- kv vs prefix-greedy: hit rate %.1f %% vs %.1f %%, balance %.2f vs %.2f, mean TTFT %.1f vs %.1f ms%n",
          100 * k.hitRate(), 100 * g.hitRate(), k.busyBalance(), g.busyBalance(), k.meanTtftMillis(),
          g.meanTtftMillis()));
    }
    return out.toString();
  }

  private static Optional<RunResult> find(List<RunResult> results, String label) {
    return results.stream().filter(r -> r.label().equals(label)).findFirst();
  }
}
