package io.kvrouter.sim.report;

import io.kvrouter.sim.driver.RunResult;
import io.kvrouter.sim.workload.OverloadWorkload;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

/**
 * The overload benchmark's table: per row, time to first token (queueing in the router and the engines included)
 * over every request, short and long prompts, each tenant and each tier, and the share of first tokens each tenant
 * got while requests were still arriving (the fleet was overloaded throughout).
 */
public final class OverloadReport {
  private OverloadReport() {}

  public static String markdown(Report.Context context, List<RunResult> results, double durationSeconds) {
    StringBuilder md = new StringBuilder();
    md.append("## ").append(context.title()).append("\n\n");
    md.append("- date: ").append(context.date()).append("\n");
    md.append("- command: `").append(context.command()).append("`\n");
    md.append("- mode: ").append(context.mode()).append("\n");
    md.append("- fleet: ").append(context.fleet()).append("\n");
    md.append("- workload: ").append(context.workload()).append("\n\n");
    md.append("TTFT in seconds, from arrival to the first token (router queue and engine queue included).\n\n");
    md.append("| admission | served | TTFT mean | p50 | p99 | max | short prompts mean | long prompts mean | long "
        + "prompts p99 | tenant a / b mean | a share of first tokens while arriving | tier 1 / tier 0 p99 | tier 0 "
        + "max | tier 0 first tokens while arriving | output tok/s |\n");
    md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    long window = Math.round(durationSeconds * 1e6);
    for (RunResult r : results) {
      List<RunResult.Served> s = r.served();
      long aServed = s.stream().filter(x -> x.policyClass().equals("a") && x.arrivalMicros() + x.ttftMicros() <= window)
          .count();
      long bServed = s.stream().filter(x -> x.policyClass().equals("b") && x.arrivalMicros() + x.ttftMicros() <= window)
          .count();
      long tierZeroWhileArriving = s.stream().filter(x -> x.strictPriority() == 0
          && x.arrivalMicros() + x.ttftMicros() <= window).count();
      long tierZero = s.stream().filter(x -> x.strictPriority() == 0).count();
      md.append(String.format(Locale.ROOT,
          "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f / %.2f | %.0f %% | %.2f / %.2f | %.2f "
              + "| %d of %d | %.0f |%n",
          r.label(), r.completed(), mean(s, x -> true), quantile(s, x -> true, 0.5), quantile(s, x -> true, 0.99),
          quantile(s, x -> true, 1.0), mean(s, OverloadReport::shortPrompt), mean(s, x -> !shortPrompt(x)),
          quantile(s, x -> !shortPrompt(x), 0.99), mean(s, x -> x.policyClass().equals("a")),
          mean(s, x -> x.policyClass().equals("b")), aServed + bServed == 0 ? 0 : 100.0 * aServed / (aServed + bServed),
          quantile(s, x -> x.strictPriority() == 1, 0.99), quantile(s, x -> x.strictPriority() == 0, 0.99),
          quantile(s, x -> x.strictPriority() == 0, 1.0), tierZeroWhileArriving, tierZero,
          r.outputTokensPerSecond()));
    }
    return md.toString();
  }

  private static boolean shortPrompt(RunResult.Served s) {
    return s.promptTokens() <= OverloadWorkload.SHORT_MAX;
  }

  private static double mean(List<RunResult.Served> served, Predicate<RunResult.Served> which) {
    return served.stream().filter(which).mapToLong(RunResult.Served::ttftMicros).average().orElse(0) / 1e6;
  }

  /** Nearest-rank quantile in seconds (1.0: the maximum). */
  private static double quantile(List<RunResult.Served> served, Predicate<RunResult.Served> which, double q) {
    long[] values = served.stream().filter(which).mapToLong(RunResult.Served::ttftMicros).sorted().toArray();
    if (values.length == 0) {
      return 0;
    }
    int rank = (int) Math.ceil(q * values.length);
    return values[Math.max(0, Math.min(values.length - 1, rank - 1))] / 1e6;
  }
}
