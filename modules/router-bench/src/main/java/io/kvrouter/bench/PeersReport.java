package io.kvrouter.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/** {@code bench peers}' results: one Markdown table per workload, the column winners, and an SVG chart. */
final class PeersReport {
  private PeersReport() {}

  static final String[] HEADER = {"router", "answered / errors", "hit rate", "TTFT p50 (ms)", "TTFT p99 (ms)",
      "TTFT mean (ms)", "E2E p50 (ms)", "E2E mean (ms)", "output tok/s", "router CPU per request (µs)",
      "of which JIT (µs)", "harness CPU per request (µs)", "busiest / mean engine"};

  static Path write(PeersBench bench, List<PeersBench.Row> rows, Map<String, String> traces,
      Map<String, String> versions, String started, String loadAtStart, Path logs) {
    Report report = new Report("kvrouter against other routers on the same engines and traces (bench peers)");
    StringBuilder v = new StringBuilder();
    versions.forEach((name, version) -> v.append(v.length() == 0 ? "" : ", ").append(name).append(' ')
        .append(version));
    report.paragraph(String.format(Locale.ROOT, "Started %s. Versions: %s. %d simulated engines (`bin/sim engines`, "
        + "one JVM each, vLLM's HTTP API, /metrics and ZMQ KV events, %d KV blocks of 16 tokens each, tokenizing "
        + "with models/kvrouter-tiny), time scale %s (the engines' step times and the traces' arrival and think "
        + "times divided by it). One router at a time, each started for its row and stopped after it, in front of "
        + "engines started afresh for the row (the same configuration; no KV event history from other rows), warmed up with %d streamed chat completions of unique prompts, then the engines' "
        + "prefix caches reset (POST /reset_prefix_cache) before the measured run; the load is "
        + "NVIDIA's aiperf (`aiperf profile --endpoint-type chat --streaming --custom-dataset-type mooncake_trace "
        + "--fixed-schedule --tokenizer <models/kvrouter-tiny> --extra-inputs ignore_eos:true "
        + "--use-server-token-count --random-seed %d`), the same trace and seed for every router.", started,
        v, bench.engines, bench.kvBlocks, fmt(bench.timeScale, 0), bench.warmupRequests, bench.seed));
    report.paragraph("Columns: **hit rate** = prompt tokens served from the engines' prefix caches over prompt "
        + "tokens, from the engines' own counters (`vllm:prefix_cache_hits_total` / `vllm:prefix_cache_queries_total`, "
        + "before and after the run); **TTFT** and **E2E** (request latency) as aiperf measured them, wall-clock "
        + "milliseconds (engine compute is the time scale faster than an H100's, a router's own overhead is not "
        + "scaled); **output tok/s** aiperf's output token throughput; **router CPU per request** the router "
        + "process tree's CPU time (utime + stime from /proc) over the run per answered request, with the part its "
        + "JIT compiler threads spent during the run; **harness CPU** the forwarding "
        + "harness's own (Dynamo's service forwards nothing); **busiest / mean engine** the busiest engine's prompt "
        + "tokens over the mean (1.00 = even).");
    Map<String, List<PeersBench.Row>> byWorkload = new LinkedHashMap<>();
    for (PeersBench.Row row : rows) {
      byWorkload.computeIfAbsent(row.workload(), k -> new ArrayList<>()).add(row);
    }
    for (Map.Entry<String, List<PeersBench.Row>> entry : byWorkload.entrySet()) {
      report.heading(entry.getKey());
      report.paragraph(traces.getOrDefault(entry.getKey(), ""));
      Report.Table table = new Report.Table(HEADER);
      for (PeersBench.Row r : entry.getValue()) {
        if (r.failure() != null) {
          table.row(r.router(), "did not run", "—", "—", "—", "—", "—", "—", "—", "—", "—", "—", "—");
          continue;
        }
        table.row(r.router(), r.ok() + " / " + r.errors(), pct(r.hitRate()), fmt(r.ttftP50(), 1),
            fmt(r.ttftP99(), 1), fmt(r.ttftMean(), 1), fmt(r.e2eP50(), 0), fmt(r.e2eMean(), 0),
            fmt(r.outputTokensPerSecond(), 0), fmt(r.cpuMicrosPerRequest(), 0), fmt(r.jitMicrosPerRequest(), 0),
            fmt(r.harnessMicrosPerRequest(), 0), fmt(r.balance(), 2));
      }
      report.table(table);
      report.paragraph(winners(entry.getValue()));
    }
    StringBuilder how = new StringBuilder("Routers:\n\n");
    Map<String, String> seen = new LinkedHashMap<>();
    for (PeersBench.Row row : rows) {
      if (!row.how().isEmpty()) {
        seen.putIfAbsent(row.router(), row.how());
      }
    }
    seen.forEach((router, text) -> how.append("- `").append(router).append("`: ").append(text).append('\n'));
    for (PeersBench.Row row : rows) {
      if (row.failure() != null) {
        how.append("- not run: `").append(row.router()).append("` on ").append(row.workload()).append(": ")
            .append(row.failure().replace('\n', ' ')).append('\n');
      }
    }
    report.paragraph(how.toString());
    report.paragraph(String.format(Locale.ROOT, "Load averages (/proc/loadavg, 1/5/15 min) at the start: %s; at "
        + "the end: %s. The host's 2 CPUs are shared with other work: these figures are not from a quiet host; "
        + "compare rows of one run, not runs.", loadAtStart, BenchProcesses.loadAverages()));
    report.paragraph("Process logs and aiperf's exports: `" + BenchProcesses.repositoryRoot().relativize(logs)
        + "`.");
    Path dir = bench.out != null ? bench.out : BenchProcesses.repositoryRoot().resolve("modules/router-bench/results");
    String name = bench.quick ? bench.fileName.replace(".md", "-quick.md") : bench.fileName;
    Path file = report.write(dir, name);
    try {
      Files.writeString(dir.resolve(name.replace(".md", ".svg")), svg(byWorkload), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return file;
  }

  /** Which router has the best figure of each judged column (the targets: hit rate, mean TTFT, CPU). */
  static String winners(List<PeersBench.Row> rows) {
    List<PeersBench.Row> ran = rows.stream().filter(r -> r.failure() == null).toList();
    if (ran.isEmpty()) {
      return "No router ran.";
    }
    return "Best: hit rate " + best(ran, PeersBench.Row::hitRate, true) + "; mean TTFT "
        + best(ran, PeersBench.Row::ttftMean, false) + "; router CPU per request "
        + best(ran, PeersBench.Row::cpuMicrosPerRequest, false) + ".";
  }

  private static String best(List<PeersBench.Row> rows, ToDoubleFunction<PeersBench.Row> value, boolean highest) {
    Comparator<PeersBench.Row> order = Comparator.comparingDouble(value);
    return rows.stream().filter(r -> !Double.isNaN(value.applyAsDouble(r)))
        .max(highest ? order : order.reversed()).map(r -> "`" + r.router() + "`").orElse("—");
  }

  static String pct(double v) {
    return Double.isNaN(v) ? "—" : String.format(Locale.ROOT, "%.1f %%", 100 * v);
  }

  static String fmt(double v, int decimals) {
    return Double.isNaN(v) ? "—" : String.format(Locale.ROOT, "%." + decimals + "f", v);
  }

  // ---------------------------------------------------------------- chart

  private static final int ROW = 20;
  private static final int LABEL = 190;
  private static final int BAR = 200;
  private static final int GAP = 70;

  /** Three panels per workload: hit rate, mean TTFT and router CPU per request, one bar per router. */
  static String svg(Map<String, List<PeersBench.Row>> byWorkload) {
    int height = 40;
    for (List<PeersBench.Row> rows : byWorkload.values()) {
      height += 50 + ROW * rows.size();
    }
    int width = LABEL + 3 * (BAR + GAP) + 20;
    StringBuilder svg = new StringBuilder(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" "
        + "width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">%n<rect width=\"%d\" "
        + "height=\"%d\" fill=\"white\"/>%n", width, height, width, height));
    svg.append(text(10, 20, "kvrouter and peers on the same engines and aiperf traces (bench peers)",
        "font-size=\"14\" font-weight=\"bold\""));
    int y = 40;
    for (Map.Entry<String, List<PeersBench.Row>> entry : byWorkload.entrySet()) {
      List<PeersBench.Row> rows = entry.getValue();
      double maxTtft = rows.stream().mapToDouble(PeersBench.Row::ttftMean).filter(d -> !Double.isNaN(d)).max()
          .orElse(1);
      double maxCpu = rows.stream().mapToDouble(PeersBench.Row::cpuMicrosPerRequest).filter(d -> !Double.isNaN(d))
          .max().orElse(1);
      svg.append(text(10, y + 16, escape(entry.getKey()), "font-weight=\"bold\""));
      svg.append(text(LABEL, y + 34, "hit rate", ""));
      svg.append(text(LABEL + BAR + GAP, y + 34, "mean TTFT (ms)", ""));
      svg.append(text(LABEL + 2 * (BAR + GAP), y + 34, "router CPU per request (µs)", ""));
      int rowY = y + 42;
      for (PeersBench.Row r : rows) {
        svg.append(text(10, rowY + 13, escape(r.router()), r.router().startsWith("kvrouter")
            ? "font-weight=\"bold\"" : ""));
        if (r.failure() != null) {
          svg.append(text(LABEL, rowY + 13, "did not run", "fill=\"#a00\""));
        } else {
          bar(svg, LABEL, rowY, r.hitRate(), 1, pct(r.hitRate()), "#3b7dd8");
          bar(svg, LABEL + BAR + GAP, rowY, r.ttftMean(), maxTtft, fmt(r.ttftMean(), 1), "#d8773b");
          bar(svg, LABEL + 2 * (BAR + GAP), rowY, r.cpuMicrosPerRequest(), maxCpu, fmt(r.cpuMicrosPerRequest(), 0),
              "#5a9e4b");
        }
        rowY += ROW;
      }
      y = rowY + 8;
    }
    return svg.append("</svg>\n").toString();
  }

  private static void bar(StringBuilder svg, int x, int y, double value, double max, String label, String fill) {
    int w = Double.isNaN(value) || !(max > 0) ? 0 : (int) Math.round(BAR * Math.min(1, value / max));
    svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>%n", x, y,
        w, ROW - 6, fill));
    svg.append(text(x + w + 4, y + 12, escape(label), ""));
  }

  private static String text(int x, int y, String content, String attributes) {
    return String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" %s>%s</text>%n", x, y, attributes, content);
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
