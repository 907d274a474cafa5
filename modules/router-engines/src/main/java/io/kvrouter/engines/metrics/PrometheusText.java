package io.kvrouter.engines.metrics;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A reader of Prometheus' text exposition format (version 0.0.4, what vLLM's and SGLang's prometheus_client serve):
 * {@code name{label="value",...} value [timestamp]} lines, {@code #} comments and HELP/TYPE lines skipped. Label
 * values are unescaped ({@code \\}, {@code \"}, {@code \n}). Only samples whose name is in the wanted set are kept,
 * so a page's hundreds of histogram lines cost a name comparison each. No maintained Java library parses this
 * format (Prometheus' client_java only writes it), hence this small strict reader: a line it cannot read makes the
 * page unreadable, with the line number.
 */
public final class PrometheusText {
  /** One sample: metric name, labels in page order, value. */
  public record Sample(String name, Map<String, String> labels, double value) {}

  /** A page that is not in the text format. */
  public static final class MalformedPageException extends Exception {
    MalformedPageException(String message) {
      super(message, null, false, false);
    }
  }

  private PrometheusText() {}

  public static List<Sample> parse(String page, Set<String> wanted) throws MalformedPageException {
    List<Sample> samples = new ArrayList<>();
    int lineNumber = 0;
    int at = 0;
    int length = page.length();
    while (at < length) {
      int end = page.indexOf('\n', at);
      if (end < 0) {
        end = length;
      }
      lineNumber++;
      int from = at;
      at = end + 1;
      while (from < end && (page.charAt(from) == ' ' || page.charAt(from) == '\t')) {
        from++;
      }
      int to = end;
      while (to > from && Character.isWhitespace(page.charAt(to - 1))) {
        to--;
      }
      if (from == to || page.charAt(from) == '#') {
        continue;
      }
      int nameEnd = from;
      while (nameEnd < to && isNameChar(page.charAt(nameEnd))) {
        nameEnd++;
      }
      if (nameEnd == from) {
        throw new MalformedPageException("line " + lineNumber + ": no metric name");
      }
      String name = page.substring(from, nameEnd);
      if (!wanted.contains(name)) {
        continue;
      }
      Map<String, String> labels = Collections.emptyMap();
      int cursor = nameEnd;
      if (cursor < to && page.charAt(cursor) == '{') {
        labels = new LinkedHashMap<>();
        cursor = labels(page, cursor + 1, to, labels, lineNumber);
      }
      while (cursor < to && page.charAt(cursor) == ' ') {
        cursor++;
      }
      int valueEnd = cursor;
      while (valueEnd < to && page.charAt(valueEnd) != ' ') {
        valueEnd++;
      }
      if (valueEnd == cursor) {
        throw new MalformedPageException("line " + lineNumber + ": no value");
      }
      samples.add(new Sample(name, labels, value(page.substring(cursor, valueEnd), lineNumber)));
    }
    return samples;
  }

  private static int labels(String page, int at, int end, Map<String, String> labels, int lineNumber)
      throws MalformedPageException {
    int cursor = at;
    while (true) {
      while (cursor < end && (page.charAt(cursor) == ' ' || page.charAt(cursor) == ',')) {
        cursor++;
      }
      if (cursor < end && page.charAt(cursor) == '}') {
        return cursor + 1;
      }
      int nameStart = cursor;
      while (cursor < end && isNameChar(page.charAt(cursor))) {
        cursor++;
      }
      if (cursor == nameStart || cursor >= end || page.charAt(cursor) != '=' || cursor + 1 >= end
          || page.charAt(cursor + 1) != '"') {
        throw new MalformedPageException("line " + lineNumber + ": bad label");
      }
      String name = page.substring(nameStart, cursor);
      cursor += 2;
      StringBuilder value = new StringBuilder();
      while (true) {
        if (cursor >= end) {
          throw new MalformedPageException("line " + lineNumber + ": unterminated label value");
        }
        char c = page.charAt(cursor++);
        if (c == '"') {
          break;
        }
        if (c == '\\' && cursor < end) {
          char escaped = page.charAt(cursor++);
          value.append(escaped == 'n' ? '\n' : escaped);
        } else {
          value.append(c);
        }
      }
      labels.put(name, value.toString());
    }
  }

  private static double value(String text, int lineNumber) throws MalformedPageException {
    switch (text) {
      case "NaN":
        return Double.NaN;
      case "+Inf":
        return Double.POSITIVE_INFINITY;
      case "-Inf":
        return Double.NEGATIVE_INFINITY;
      default:
        try {
          return Double.parseDouble(text);
        } catch (NumberFormatException e) {
          throw new MalformedPageException("line " + lineNumber + ": value '" + abbreviate(text) + "'");
        }
    }
  }

  private static String abbreviate(String text) {
    return text.length() <= 32 ? text : text.substring(0, 32) + "...";
  }

  private static boolean isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
  }
}
