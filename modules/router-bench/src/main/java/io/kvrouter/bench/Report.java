package io.kvrouter.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** One benchmark's results file: a title, how it was run, Markdown tables and notes. */
final class Report {
  private final String title;
  private final StringBuilder body = new StringBuilder();

  Report(String title) {
    this.title = title;
  }

  Report paragraph(String text) {
    body.append(text).append("\n\n");
    return this;
  }

  Report heading(String text) {
    body.append("### ").append(text).append("\n\n");
    return this;
  }

  Report table(Table table) {
    body.append(table.toMarkdown()).append('\n');
    return this;
  }

  String markdown() {
    return "## " + title + "\n\n" + environment() + "\n\n" + body;
  }

  Path write(Path dir, String fileName) {
    try {
      Files.createDirectories(dir);
      Path file = dir.resolve(fileName);
      Files.writeString(file, markdown(), StandardCharsets.UTF_8);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The benchmark command line of this JVM, as the results files name it. */
  static volatile String command = "bench";

  static String environment() {
    Runtime rt = Runtime.getRuntime();
    return String.format(Locale.ROOT, "`%s`, run %s on %d CPUs, %s %s, max heap %d MiB, common pool parallelism %d.",
        command, ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z")),
        rt.availableProcessors(),
        System.getProperty("java.vm.name"), System.getProperty("java.version"), rt.maxMemory() >> 20,
        java.util.concurrent.ForkJoinPool.getCommonPoolParallelism()) + loadAverage();
  }

  /** The 1-minute load average when the report was written (other processes on the machine skew figures). */
  static String loadAverage() {
    try {
      String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return " Load average (1 / 5 min) when written: " + parts[0] + " / " + parts[1] + ".";
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  /** A Markdown table built row by row. */
  static final class Table {
    private final String[] header;
    private final List<String[]> rows = new ArrayList<>();

    Table(String... header) {
      this.header = header;
    }

    Table row(Object... cells) {
      if (cells.length != header.length) {
        throw new IllegalArgumentException("expected " + header.length + " cells, got " + cells.length);
      }
      String[] text = new String[cells.length];
      for (int i = 0; i < cells.length; i++) {
        text[i] = String.valueOf(cells[i]);
      }
      rows.add(text);
      return this;
    }

    String toMarkdown() {
      StringBuilder sb = new StringBuilder();
      sb.append("| ").append(String.join(" | ", header)).append(" |\n|");
      for (int i = 0; i < header.length; i++) {
        sb.append(i == 0 ? "---|" : "---:|");
      }
      sb.append('\n');
      for (String[] row : rows) {
        sb.append("| ").append(String.join(" | ", row)).append(" |\n");
      }
      return sb.toString();
    }
  }

  // ---- number formatting shared by the benchmarks

  /** Nanoseconds as microseconds with sensible precision. */
  static String us(double nanos) {
    double us = nanos / 1000.0;
    if (us < 10) {
      return String.format(Locale.ROOT, "%.2f", us);
    }
    if (us < 100) {
      return String.format(Locale.ROOT, "%.1f", us);
    }
    return String.format(Locale.ROOT, "%.0f", us);
  }

  /** Nanoseconds; "–" for NaN (not measured). */
  static String ns(double nanos) {
    if (Double.isNaN(nanos)) {
      return "–";
    }
    return nanos < 100 ? String.format(Locale.ROOT, "%.1f", nanos) : String.format(Locale.ROOT, "%,.0f", nanos);
  }

  /** A rate per second: 1.23M, 456k, 789. */
  static String rate(double perSecond) {
    if (perSecond >= 1e6) {
      return String.format(Locale.ROOT, "%.2fM", perSecond / 1e6);
    }
    if (perSecond >= 1e3) {
      return String.format(Locale.ROOT, "%.0fk", perSecond / 1e3);
    }
    return String.format(Locale.ROOT, "%.0f", perSecond);
  }

  static String ratio(double value) {
    return value >= 10 ? String.format(Locale.ROOT, "%.0f×", value) : String.format(Locale.ROOT, "%.2f×", value);
  }

  static String verdict(boolean met) {
    return met ? "met" : "**missed**";
  }
}
