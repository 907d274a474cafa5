package io.kvrouter.bench.transport;

import io.kvrouter.bench.transport.Bodies.Body;
import io.kvrouter.bench.transport.TransportBench.H2Result;
import io.kvrouter.bench.transport.TransportBench.Result;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** Writes the transport bench's Markdown tables and its SVG bar chart. */
final class TransportReport {
  static final double SELECT_TARGET = 1.25;
  static final double PAIR_TARGET = 2.0;

  private final TransportBench bench;
  private final List<Result> results;
  private final List<H2Result> h2;
  private final List<String> notes;
  private final String when = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm"));

  TransportReport(TransportBench bench, List<Result> results, List<H2Result> h2, List<String> notes) {
    this.bench = bench;
    this.results = results;
    this.h2 = h2;
    this.notes = notes;
  }

  /**
   * Writes the tables this run has rows for; a file whose step did not run (say {@code --steps noop}) keeps what
   * an earlier run wrote, so a partial run never blanks the published tables.
   */
  void write(Path out) throws IOException {
    Files.createDirectories(out);
    boolean selects = hasRows(TransportBench.NOOP, "select") || hasRows(TransportBench.ROUTER, "select");
    if (selects) {
      Files.writeString(out.resolve("transport-select.md"), select());
      Files.writeString(out.resolve("transport-cpu.svg"), svg());
    }
    if (hasRows(TransportBench.NOOP, "pair") || hasRows(TransportBench.ROUTER, "pair")) {
      Files.writeString(out.resolve("transport-book.md"), book());
    }
    if (!h2.isEmpty()) {
      Files.writeString(out.resolve("transport-h2load.md"), h2load());
    }
  }

  private boolean hasRows(String group, String mode) {
    return !of(group, mode).isEmpty();
  }

  private String header(String title) {
    StringBuilder s = new StringBuilder();
    s.append("# ").append(title).append("\n\n");
    s.append(String.format(Locale.ROOT, "Run %s on %d cores, JDK %s%s; every server and the driver a separate JVM "
            + "with `-Djava.util.concurrent.ForkJoinPool.common.parallelism=4`; loopback only. Client: grpc-java "
            + "(grpc-netty-shaded) channels, one connection each, %d outstanding unary calls per connection; %s. "
            + "Server CPU = utime+stime of the server process from `/proc/<pid>/stat` over the measured window "
            + "divided by the calls (or pairs) completed in it; the client shares the 2 cores, so calls/s is bounded "
            + "by the client as well.\n\n",
        when, Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
        bench.isQuick() ? " (**--quick: smoke-run windows, not figures to quote**)" : "", bench.outstanding(),
        bench.windows()));
    return s.toString();
  }

  private static String row(Object... cells) {
    StringBuilder s = new StringBuilder("|");
    for (Object cell : cells) {
      s.append(' ').append(cell).append(" |");
    }
    return s.append('\n').toString();
  }

  private static String f0(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%,.0f", v);
  }

  private static String f1(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.1f", v);
  }

  private static String f2(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.2f", v);
  }

  private List<Result> of(String group, String mode) {
    return results.stream().filter(r -> r.group().equals(group) && mode.equals(r.mode())).toList();
  }

  private String table(List<Result> rows, String unit) {
    StringBuilder s = new StringBuilder();
    s.append(row("server", "round", "body", "conns", unit + "/s", "p50 µs", "p99 µs", "server CPU µs/" + unit,
        "of which JIT compiler threads", "client CPU µs/" + unit, "other procs (cores)",
        "grpc-status outcomes in the window"));
    s.append(row("---", "---:", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"));
    for (Result r : rows) {
      String round = r.round() == 0 ? "-" : Integer.toString(r.round());
      if (!r.ok()) {
        s.append(row(r.label(), round, r.body() == null ? "-" : r.body().key,
            r.connections() == 0 ? "-" : r.connections(), "failed", "", "", "", "", "", "", r.error()));
        continue;
      }
      s.append(row(r.label(), round, r.body().key, r.connections(), f0(r.opsPerS()), f0(r.p50()), f0(r.p99()),
          "**" + f1(r.serverUs()) + "**", f1(r.jitUs()), f1(r.clientUs()), f2(r.otherCores()),
          r.outcomes().replace(";", ", ")));
    }
    return s.toString();
  }

  private List<Result> failures(String group) {
    return results.stream().filter(r -> r.group().equals(group) && !r.ok()
        && ("start".equals(r.mode()) || "probe".equals(r.mode()))).toList();
  }

  /** The cheapest no-op server's result for the point in the same round. */
  private Optional<Result> cheapest(String mode, Body body, int conns, int round) {
    return of(TransportBench.NOOP, mode).stream()
        .filter(r -> r.ok() && r.body() == body && r.connections() == conns && r.round() == round)
        .min((a, b) -> Double.compare(a.serverUs(), b.serverUs()));
  }

  /**
   * The target table: per binding and point, the router's CPU over the cheapest no-op's in each round, and the
   * median of those ratios, which the verdict uses (the host's speed drifts between minutes, a round's servers are
   * measured minutes apart at most).
   */
  private void targetRows(StringBuilder s, String mode, int conns, double target, boolean perBody) {
    Map<String, List<double[]>> byPoint = new java.util.LinkedHashMap<>();
    Map<String, String> baseLabel = new java.util.HashMap<>();
    for (Result r : of(TransportBench.ROUTER, mode)) {
      if (!r.ok() || r.connections() != conns) {
        continue;
      }
      Optional<Result> base = cheapest(mode, r.body(), conns, r.round());
      if (base.isEmpty()) {
        continue;
      }
      String point = r.server().replace("router-", "") + "|" + (perBody ? r.body().key : Integer.toString(conns));
      byPoint.computeIfAbsent(point, k -> new ArrayList<>())
          .add(new double[] {r.serverUs(), base.get().serverUs(), r.round()});
      baseLabel.merge(point, base.get().label(), (a, b) -> a.equals(b) ? a : a + " / " + b);
    }
    for (Map.Entry<String, List<double[]>> e : byPoint.entrySet()) {
      String[] key = e.getKey().split("\\|");
      List<double[]> rounds = e.getValue();
      double[] ratios = rounds.stream().mapToDouble(x -> x[0] / x[1]).sorted().toArray();
      double median = medianValue(ratios);
      StringBuilder each = new StringBuilder();
      for (double[] x : rounds) {
        each.append(each.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.2f× (%.1f / %.1f)",
            x[0] / x[1], x[0], x[1]));
      }
      s.append(row(key[0], key[1], median(rounds.stream().mapToDouble(x -> x[0]).sorted().toArray()),
          baseLabel.get(e.getKey()), median(rounds.stream().mapToDouble(x -> x[1]).sorted().toArray()),
          each, "**" + f2(median) + "×**", verdict(median, target)));
    }
  }

  /**
   * The targets' verdicts: the router and the cheapest no-op server measured side by side by one driver, the load
   * alternating between them in short slices (see {@link TransportBench#VERSUS_ROUTER}).
   */
  private void sideBySide(StringBuilder s, String mode, double target, String unit) {
    List<Result> routers = of(TransportBench.VERSUS_ROUTER, mode);
    if (routers.isEmpty()) {
      return;
    }
    s.append(String.format(Locale.ROOT, "### Side by side (the verdict): one driver alternates %s slices of load "
        + "between the router and that no-op server, both kept warm; each figure is over %s of its slices%n%n",
        bench.sliceLabel(), bench.measureLabel()));
    s.append(row("binding", "body", "conns", "kvrouter µs/" + unit, "of which JIT", "no-op server", "no-op µs/" + unit,
        "of which JIT", "kvrouter " + unit + "s/s ÷ no-op's", "ratio", "target"));
    s.append(row("---", "---", "---:", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---"));
    List<Result> noops = of(TransportBench.VERSUS_NOOP, mode);
    for (Result r : routers) {
      if (!r.ok()) {
        s.append(row(r.server().replace("router-", ""), "-", "-", "failed: " + r.error(), "", "", "", "", "", "", ""));
        continue;
      }
      Optional<Result> base = noops.stream().filter(n -> n.ok() && n.body() == r.body()
          && n.connections() == r.connections() && results.indexOf(n) > results.indexOf(r)).findFirst();
      if (base.isEmpty()) {
        continue;
      }
      double ratio = r.serverUs() / base.get().serverUs();
      s.append(row(r.server().replace("router-", ""), r.body().key, r.connections(), "**" + f1(r.serverUs()) + "**",
          f1(r.jitUs()), base.get().label(), "**" + f1(base.get().serverUs()) + "**", f1(base.get().jitUs()),
          f2(r.opsPerS() / base.get().opsPerS()), "**" + f2(ratio) + "×**", verdict(ratio, target)));
    }
    s.append('\n');
  }

  private static String median(double[] sorted) {
    return f1(medianValue(sorted));
  }

  private static double medianValue(double[] sorted) {
    int n = sorted.length;
    return n == 0 ? Double.NaN : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  String select() {
    StringBuilder s = new StringBuilder(header("Transport: Select over gRPC, CPU per call"));
    s.append("Bodies: `tokens` = RouteRequest with the 2,048-token prompt as `token_ids` (")
        .append(Bodies.request(Body.TOKENS).getSerializedSize()).append(" bytes); `hashes` = its ")
        .append(Bodies.localHashes().length).append(" local `block_hashes` with `isl_tokens` = 2,048 (")
        .append(Bodies.request(Body.HASHES).getSerializedSize()).append(" bytes). The no-op servers decode the ")
        .append("request and answer a fixed Selection (").append(Bodies.SELECTION.getSerializedSize())
        .append(" bytes); the router answers its real pick (`kv` policy, 64 workers).\n\n");
    s.append("## No-op servers\n\n").append(table(of(TransportBench.NOOP, "select"), "call")).append('\n');
    s.append("## kvrouter\n\n").append(table(of(TransportBench.ROUTER, "select"), "call")).append('\n');
    s.append("## Target: our Select at ").append(bench.maxConnections())
        .append(" connections ≤ 1.25× the CPU per call of the cheapest no-op Java gRPC server, same body\n\n");
    sideBySide(s, "select", SELECT_TARGET, "call");
    s.append("### Standalone rounds (each server loaded on its own, one after another)\n\n");
    s.append(row("binding", "body", "kvrouter µs/call (median)", "cheapest no-op (per round)",
        "no-op µs/call (median)", "ratio per round (kvrouter / no-op µs)", "median ratio", "target"));
    s.append(row("---", "---", "---:", "---", "---:", "---", "---:", "---"));
    targetRows(s, "select", bench.maxConnections(), SELECT_TARGET, true);
    s.append('\n');
    appendFailuresAndNotes(s, TransportBench.NOOP);
    return s.toString();
  }

  private static String verdict(double ratio, double target) {
    return ratio <= target ? "met" : String.format(Locale.ROOT, "**missed by %.0f%%** (%.2f× over the %.2f× bound)",
        (ratio / target - 1) * 100, ratio / target, target);
  }

  private void appendFailuresAndNotes(StringBuilder s, String group) {
    List<Result> failed = new ArrayList<>(failures(group));
    failed.addAll(failures(TransportBench.ROUTER));
    if (!failed.isEmpty() || !notes.isEmpty()) {
      s.append("## Notes\n\n");
      for (Result r : failed) {
        s.append("- ").append(r.label()).append(": not measured (").append(r.error()).append(").\n");
      }
      for (String note : new java.util.LinkedHashSet<>(notes)) {
        s.append("- ").append(note).append('\n');
      }
      s.append('\n');
    }
  }

  String book() {
    StringBuilder s = new StringBuilder(header("Transport: Book + Release over gRPC"));
    s.append("One operation = a Book with a unique `request_id` (the `hashes` body) and, once it answers, the Release ")
        .append("of the returned attempt on the same connection; latency is the pair's. The no-op rows are the same ")
        .append("two calls with the same bodies against the no-op servers (fixed Booking / Released answers).\n\n");
    s.append("## Pairs\n\n").append(table(of(TransportBench.NOOP, "pair"), "pair"))
        .append(table(of(TransportBench.ROUTER, "pair"), "pair").lines().skip(2)
            .map(l -> l + "\n").reduce("", String::concat)).append('\n');
    s.append("## Target: CPU of a Book+Release pair ≤ 2× the CPU of two no-op calls (the cheapest no-op server's "
        + "pair, same bodies)\n\n");
    sideBySide(s, "pair", PAIR_TARGET, "pair");
    s.append("### Standalone rounds (each server loaded on its own, one after another)\n\n");
    s.append(row("binding", "conns", "kvrouter µs/pair (median)", "cheapest no-op (per round)",
        "no-op µs/pair (median)", "ratio per round (kvrouter / no-op µs)", "median ratio", "target"));
    s.append(row("---", "---:", "---:", "---", "---:", "---", "---:", "---"));
    for (int conns : bench.connectionCounts()) {
      targetRows(s, "pair", conns, PAIR_TARGET, false);
    }
    s.append('\n');
    appendFailuresAndNotes(s, TransportBench.NOOP);
    return s.toString();
  }

  String h2load() {
    StringBuilder s = new StringBuilder(header("Transport: h2load (an extra column; HTTP status only)"));
    s.append("h2load (nghttp2-client) with the same framed bodies and `content-type: application/grpc`, "
        + "`te: trailers`, one thread; it checks HTTP status only, never grpc-status (the grpc-java probe "
        + "checked each server first). A warm-up run, then the measured run; server CPU read around it.\n\n");
    s.append(row("server", "body", "conns × streams", "req/s", "2xx", "done", "failed", "server CPU µs/req",
        "mean latency"));
    s.append(row("---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"));
    for (H2Result r : h2) {
      if (r.error() != null) {
        s.append(row(r.label(), r.body().key, r.connections() + " × " + r.streams(), "failed", "", "", "", "",
            r.error()));
        continue;
      }
      s.append(row(r.label(), r.body().key, r.connections() + " × " + r.streams(), f0(r.reqPerS()), r.status2xx(),
          r.done(), r.failed(), "**" + f1(r.serverUs()) + "**", r.meanLatency()));
    }
    return s.toString();
  }

  /** A horizontal bar chart: server CPU µs per Select at the highest connection count, one bar per body. */
  String svg() {
    int conns = bench.maxConnections();
    // one bar per server and body: its median round
    Map<String, List<Result>> byServer = new java.util.LinkedHashMap<>();
    for (String group : List.of(TransportBench.NOOP, TransportBench.ROUTER)) {
      for (Result r : of(group, "select")) {
        if (r.ok() && r.connections() == conns) {
          byServer.computeIfAbsent(r.server() + "|" + r.body().key, k -> new ArrayList<>()).add(r);
        }
      }
    }
    List<Result> bars = new ArrayList<>();
    for (List<Result> rounds : byServer.values()) {
      List<Result> sorted = new ArrayList<>(rounds);
      sorted.sort((a, b) -> Double.compare(a.serverUs(), b.serverUs()));
      bars.add(sorted.get((sorted.size() - 1) / 2));
    }
    double max = bars.stream().mapToDouble(Result::serverUs).max().orElse(1);
    int labelWidth = 430;
    int chartWidth = 420;
    int barHeight = 16;
    int gap = 6;
    int top = 54;
    int height = top + bars.size() * (barHeight + gap) + 40;
    StringBuilder s = new StringBuilder();
    s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        + "font-family=\"sans-serif\" font-size=\"12\">\n", labelWidth + chartWidth + 80, height));
    s.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    s.append(String.format(Locale.ROOT, "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">Server CPU µs "
        + "per Select, %d connections × %d outstanding (%s; median round)</text>\n", conns, bench.outstanding(), when));
    s.append("<text x=\"10\" y=\"38\" fill=\"#555\">grpc-java client; blue: 2,048 token ids, orange: 128 block "
        + "hashes; lower is better</text>\n");
    int y = top;
    for (Result r : bars) {
      int w = (int) Math.max(1, Math.round(r.serverUs() / max * chartWidth));
      String color = r.body() == Body.TOKENS ? "#4C78A8" : "#F58518";
      s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s — %s</text>\n",
          labelWidth - 8, y + barHeight - 4, escape(r.label().replace("`", "")), r.body().key));
      s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
          labelWidth, y, w, barHeight, color));
      s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%.1f</text>\n", labelWidth + w + 6,
          y + barHeight - 4, r.serverUs()));
      y += barHeight + gap;
    }
    s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
        labelWidth, top - 4, labelWidth, y));
    s.append("</svg>\n");
    return s.toString();
  }

  private static String escape(String text) {
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
