package io.kvrouter.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** A small grouped bar chart on a log10 axis, written as plain SVG. */
final class Svg {
  private Svg() {}

  record Series(String name, String color, double[] values) {}

  static Path groupedBars(Path file, String title, String yLabel, List<String> groups, List<Series> series) {
    int width = 640;
    int height = 360;
    int left = 80;
    int right = 150;
    int top = 40;
    int bottom = 50;
    double plotW = width - left - right;
    double plotH = height - top - bottom;
    double max = 1;
    double min = Double.MAX_VALUE;
    for (Series s : series) {
      for (double v : s.values()) {
        max = Math.max(max, v);
        if (v > 0) {
          min = Math.min(min, v);
        }
      }
    }
    int lo = (int) Math.floor(Math.log10(Math.min(min, max)));
    int hi = (int) Math.ceil(Math.log10(max));
    if (hi <= lo) {
      hi = lo + 1;
    }
    StringBuilder svg = new StringBuilder();
    svg.append(String.format(Locale.ROOT,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            + "font-family=\"sans-serif\" font-size=\"12\">%n", width, height, width, height));
    svg.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>%n",
        left, escape(title)));
    for (int e = lo; e <= hi; e++) {
      double y = top + plotH - (e - lo) / (double) (hi - lo) * plotH;
      svg.append(String.format(Locale.ROOT,
          "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n", left, y, left + plotW, y));
      svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
          left - 6, y + 4, escape(Report.rate(Math.pow(10, e)))));
    }
    svg.append(String.format(Locale.ROOT,
        "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\">%s</text>%n",
        top + plotH / 2, escape(yLabel + " (log scale)")));
    double groupW = plotW / groups.size();
    double barW = groupW * 0.7 / series.size();
    for (int g = 0; g < groups.size(); g++) {
      double x0 = left + g * groupW + groupW * 0.15;
      for (int s = 0; s < series.size(); s++) {
        double v = series.get(s).values()[g];
        double frac = v <= 0 ? 0 : (Math.log10(v) - lo) / (hi - lo);
        double h = Math.max(0, frac) * plotH;
        double x = x0 + s * barW;
        svg.append(String.format(Locale.ROOT,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s: %s</title></rect>%n",
            x, top + plotH - h, barW - 2, h, series.get(s).color(), escape(series.get(s).name()),
            escape(Report.rate(v))));
        svg.append(String.format(Locale.ROOT,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%s</text>%n",
            x + (barW - 2) / 2, top + plotH - h - 4, escape(Report.rate(v))));
      }
      svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>%n",
          left + g * groupW + groupW / 2, top + plotH + 18, escape(groups.get(g))));
    }
    svg.append(String.format(Locale.ROOT,
        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>%n", left, top, left, top + plotH));
    svg.append(String.format(Locale.ROOT,
        "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>%n", left, top + plotH,
        left + plotW, top + plotH));
    for (int s = 0; s < series.size(); s++) {
      double y = top + 10 + s * 20;
      svg.append(String.format(Locale.ROOT,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>%n", left + plotW + 16, y,
          series.get(s).color()));
      svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\">%s</text>%n", left + plotW + 34, y + 10,
          escape(series.get(s).name())));
    }
    svg.append("</svg>\n");
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(file, svg.toString(), StandardCharsets.UTF_8);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
