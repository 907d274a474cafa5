package io.kvrouter.cli;

import io.kvrouter.api.v1.CandidateExplanation;
import io.kvrouter.api.v1.ExplainReply;
import io.kvrouter.api.v1.Explanation;
import io.kvrouter.api.v1.FilteredRank;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** Decisions as people read them: one block per decision, a table of its candidates, its filtered ranks. */
final class ExplanationText {
  private static final String ROW = "  %s %-24s %9s %10s %8s %14s %7s %12s  %s%n";

  private ExplanationText() {}

  static String of(ExplainReply reply) {
    StringBuilder out = new StringBuilder();
    out.append(String.format(Locale.ROOT, "model %s: %d decision(s) as node %s tells them, newest first%n",
        reply.getModel(), reply.getDecisionsCount(), reply.getNode()));
    reply.getDecisionsList().forEach(d -> out.append(System.lineSeparator()).append(of(d)));
    return out.toString().stripTrailing();
  }

  static String of(Explanation d) {
    StringBuilder out = new StringBuilder();
    out.append(String.format(Locale.ROOT, "%s %s at %s, policy %s, view %d, %d request block(s), decided by %s%n",
        d.getKind(), d.getRequestId().isEmpty() ? "(no request id)" : "request " + d.getRequestId(),
        Instant.ofEpochMilli(d.getUnixMs()), d.getPolicy(), d.getViewVersion(), d.getRequestBlocks(), d.getNode()));
    out.append(String.format(Locale.ROOT, "  picked %s/%d (%s), cost %s, %s%n", d.getPicked().getWorkerId(),
        d.getPicked().getDpRank(), d.getPicked().getEndpoint(), number(d.getPickedCost()),
        d.getHasRunnerUp() ? "runner-up " + number(d.getRunnerUpCost()) + ", margin " + number(d.getMargin())
            : "no runner-up"));
    out.append(String.format(Locale.ROOT, "  candidates (%d of %d):%n", d.getCandidatesCount(),
        d.getCandidatesTotal()));
    out.append(String.format(Locale.ROOT, ROW, " ", "rank", "in_flight", "prefill", "decode", "overlap d/h/d",
        "active", "cost", "terms"));
    for (CandidateExplanation c : d.getCandidatesList()) {
      out.append(String.format(Locale.ROOT, ROW, c.getPicked() ? "*" : " ", c.getWorkerId() + "/" + c.getDpRank(),
          c.getInFlight(), c.getPrefillTokens(), c.getDecodeBlocks(),
          c.getDeviceOverlap() + "/" + c.getHostOverlap() + "/" + c.getDiskOverlap(), c.getActiveMatched(),
          number(c.getCost()), terms(c.getCostTermsMap())));
    }
    if (d.getFilteredTotal() > 0) {
      out.append(String.format(Locale.ROOT, "  filtered (%d of %d):%n", d.getFilteredCount(), d.getFilteredTotal()));
      for (FilteredRank f : d.getFilteredList()) {
        out.append(String.format(Locale.ROOT, "    %-24s %s%n", f.getWorkerId() + "/" + f.getDpRank(),
            f.getReason()));
      }
    }
    return out.toString();
  }

  private static String terms(Map<String, Double> terms) {
    return terms.entrySet().stream().map(t -> t.getKey() + "=" + number(t.getValue()))
        .collect(Collectors.joining(" "));
  }

  private static String number(double value) {
    return String.format(Locale.ROOT, "%.4f", value);
  }
}
