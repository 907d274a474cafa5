package io.kvrouter.sim.report;

import io.kvrouter.sim.driver.RunResult;
import java.util.List;
import java.util.Locale;

/** Two bar panels side by side: prefix-cache hit rate (the ideal as a dashed line) and mean TTFT, per placement. */
public final class SvgChart {
  private static final int ROW = 26;
  private static final int LABEL = 230;
  private static final int BAR = 260;
  private static final int GAP = 110;

  private SvgChart() {}

  public static String render(String title, List<RunResult> results) {
    int height = 70 + ROW * results.size() + 20;
    int width = LABEL + 2 * BAR + GAP + 60;
    double maxTtft = results.stream().mapToDouble(RunResult::meanTtftMillis).max().orElse(1);
    if (!(maxTtft > 0)) {
      maxTtft = 1;
    }
    StringBuilder svg = new StringBuilder();
    svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        + "font-family=\"sans-serif\" font-size=\"12\">%n", width, height));
    svg.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", width, height));
    svg.append(text(10, 20, escape(title), "font-size=\"14\" font-weight=\"bold\""));
    int hitX = LABEL;
    int ttftX = LABEL + BAR + GAP;
    svg.append(text(hitX, 45, "prefix-cache hit rate (dashed: ideal)", ""));
    svg.append(text(ttftX, 45, String.format(Locale.ROOT, "mean TTFT (ms, max %.0f)", maxTtft), ""));
    for (int i = 0; i < results.size(); i++) {
      RunResult r = results.get(i);
      int y = 60 + ROW * i;
      svg.append(text(10, y + 14, escape(r.label()), ""));
      int hitWidth = (int) Math.round(BAR * r.hitRate());
      svg.append(rect(hitX, y, hitWidth, ROW - 8, "#3b7dd8"));
      svg.append(text(hitX + hitWidth + 4, y + 14, String.format(Locale.ROOT, "%.1f %%", 100 * r.hitRate()), ""));
      int ttftWidth = (int) Math.round(BAR * r.meanTtftMillis() / maxTtft);
      svg.append(rect(ttftX, y, ttftWidth, ROW - 8, "#d8773b"));
      svg.append(text(ttftX + ttftWidth + 4, y + 14, String.format(Locale.ROOT, "%.0f", r.meanTtftMillis()), ""));
    }
    if (!results.isEmpty()) {
      int idealX = hitX + (int) Math.round(BAR * results.get(0).idealHitRate());
      svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"52\" x2=\"%d\" y2=\"%d\" stroke=\"black\" "
          + "stroke-dasharray=\"4 3\"/>%n", idealX, idealX, 60 + ROW * results.size()));
    }
    svg.append("</svg>\n");
    return svg.toString();
  }

  private static String rect(int x, int y, int w, int h, String fill) {
    return String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>%n",
        x, y, Math.max(w, 0), h, fill);
  }

  private static String text(int x, int y, String content, String attributes) {
    return String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" %s>%s</text>%n", x, y, attributes, content);
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
