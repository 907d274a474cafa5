package io.kvrouter.tokenizer;

import java.time.ZonedDateTime;
import java.time.format.TextStyle;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

/**
 * Python's {@code str} methods with Python's semantics (whitespace as {@code str.isspace} defines it, {@code split}
 * with and without a separator, {@code title} word boundaries), and {@code strftime} for {@code strftime_now}.
 * Chat templates call these on message content; Java's own methods differ in names and in edge cases.
 */
final class PythonStrings {
  private PythonStrings() {}

  /** Python's {@code str.isspace} for one character. */
  static boolean isSpace(int c) {
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == 0x85;
  }

  static String strip(String s, Object chars, boolean left, boolean right) {
    String set = chars == null ? null : chars.toString();
    int start = 0;
    int end = s.length();
    if (left) {
      while (start < end && stripped(s.charAt(start), set)) {
        start++;
      }
    }
    if (right) {
      while (end > start && stripped(s.charAt(end - 1), set)) {
        end--;
      }
    }
    return s.substring(start, end);
  }

  private static boolean stripped(char c, String set) {
    return set == null ? isSpace(c) : set.indexOf(c) >= 0;
  }

  static List<String> split(String s, Object separator, int maxSplit) {
    List<String> parts = new ArrayList<>();
    if (separator == null) {
      int i = 0;
      int n = s.length();
      while (true) {
        while (i < n && isSpace(s.charAt(i))) {
          i++;
        }
        if (i >= n) {
          break;
        }
        if (maxSplit >= 0 && parts.size() == maxSplit) {
          parts.add(strip(s.substring(i), null, false, true));
          break;
        }
        int j = i;
        while (j < n && !isSpace(s.charAt(j))) {
          j++;
        }
        parts.add(s.substring(i, j));
        i = j;
      }
      return parts;
    }
    String sep = separator.toString();
    if (sep.isEmpty()) {
      throw new IllegalArgumentException("empty separator");
    }
    int from = 0;
    while (maxSplit < 0 || parts.size() < maxSplit) {
      int at = s.indexOf(sep, from);
      if (at < 0) {
        break;
      }
      parts.add(s.substring(from, at));
      from = at + sep.length();
    }
    parts.add(s.substring(from));
    return parts;
  }

  static List<String> rsplit(String s, Object separator, int maxSplit) {
    if (maxSplit < 0) {
      return split(s, separator, -1);
    }
    List<String> reversed = new ArrayList<>();
    if (separator == null) {
      int j = s.length();
      while (true) {
        while (j > 0 && isSpace(s.charAt(j - 1))) {
          j--;
        }
        if (j <= 0) {
          break;
        }
        if (reversed.size() == maxSplit) {
          reversed.add(strip(s.substring(0, j), null, true, false));
          break;
        }
        int i = j;
        while (i > 0 && !isSpace(s.charAt(i - 1))) {
          i--;
        }
        reversed.add(s.substring(i, j));
        j = i;
      }
    } else {
      String sep = separator.toString();
      if (sep.isEmpty()) {
        throw new IllegalArgumentException("empty separator");
      }
      int end = s.length();
      while (reversed.size() < maxSplit) {
        int at = s.lastIndexOf(sep, end - sep.length());
        if (at < 0 || end - sep.length() < 0) {
          break;
        }
        reversed.add(s.substring(at + sep.length(), end));
        end = at;
      }
      reversed.add(s.substring(0, end));
    }
    List<String> parts = new ArrayList<>(reversed.size());
    for (int i = reversed.size() - 1; i >= 0; i--) {
      parts.add(reversed.get(i));
    }
    return parts;
  }

  static List<String> splitLines(String s, boolean keepEnds) {
    List<String> lines = new ArrayList<>();
    int start = 0;
    int i = 0;
    int n = s.length();
    while (i < n) {
      char c = s.charAt(i);
      int breakLength = 0;
      if (c == '\r' && i + 1 < n && s.charAt(i + 1) == '\n') {
        breakLength = 2;
      } else if (c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e
          || c == 0x85 || c == 0x2028 || c == 0x2029) {
        breakLength = 1;
      }
      if (breakLength > 0) {
        lines.add(s.substring(start, keepEnds ? i + breakLength : i));
        i += breakLength;
        start = i;
      } else {
        i++;
      }
    }
    if (start < n) {
      lines.add(s.substring(start));
    }
    return lines;
  }

  static boolean startsWith(String s, Object prefix) {
    if (prefix instanceof Collection<?> options) {
      for (Object option : options) {
        if (s.startsWith(String.valueOf(option))) {
          return true;
        }
      }
      return false;
    }
    return s.startsWith(String.valueOf(prefix));
  }

  static boolean endsWith(String s, Object suffix) {
    if (suffix instanceof Collection<?> options) {
      for (Object option : options) {
        if (s.endsWith(String.valueOf(option))) {
          return true;
        }
      }
      return false;
    }
    return s.endsWith(String.valueOf(suffix));
  }

  static String replace(String s, String old, String replacement, int count) {
    if (count < 0) {
      return s.replace(old, replacement);
    }
    StringBuilder out = new StringBuilder();
    int from = 0;
    int done = 0;
    while (done < count) {
      int at = old.isEmpty() ? (from <= s.length() ? from : -1) : s.indexOf(old, from);
      if (at < 0) {
        break;
      }
      out.append(s, from, at).append(replacement);
      if (old.isEmpty()) {
        if (at < s.length()) {
          out.append(s.charAt(at));
        }
        from = at + 1;
      } else {
        from = at + old.length();
      }
      done++;
    }
    if (from <= s.length()) {
      out.append(s.substring(Math.min(from, s.length())));
    }
    return out.toString();
  }

  /** Python's {@code str.title}: a cased character after an uncased one starts a word. */
  static String title(String s) {
    StringBuilder out = new StringBuilder(s.length());
    boolean previousCased = false;
    for (int i = 0; i < s.length(); ) {
      int c = s.codePointAt(i);
      i += Character.charCount(c);
      if (previousCased) {
        out.appendCodePoint(Character.toLowerCase(c));
      } else {
        out.appendCodePoint(Character.toTitleCase(c));
      }
      previousCased = Character.isLetter(c) && (Character.isUpperCase(c) || Character.isLowerCase(c)
          || Character.isTitleCase(c));
    }
    return out.toString();
  }

  static String capitalize(String s) {
    if (s.isEmpty()) {
      return s;
    }
    int first = s.codePointAt(0);
    return new StringBuilder().appendCodePoint(Character.toTitleCase(first))
        .append(s.substring(Character.charCount(first)).toLowerCase(Locale.ROOT)).toString();
  }

  static int count(String s, String sub) {
    if (sub.isEmpty()) {
      return s.length() + 1;
    }
    int n = 0;
    for (int at = s.indexOf(sub); at >= 0; at = s.indexOf(sub, at + sub.length())) {
      n++;
    }
    return n;
  }

  static String join(String separator, Object items) {
    StringBuilder out = new StringBuilder();
    Iterable<?> iterable = items instanceof Iterable<?> it ? it : items instanceof Object[] array ? List.of(array)
        : null;
    if (iterable == null) {
      throw new IllegalArgumentException("can only join an iterable");
    }
    boolean first = true;
    for (Object item : iterable) {
      if (!(item instanceof CharSequence)) {
        throw new IllegalArgumentException("sequence item: expected str instance, " + PythonJson.typeName(item)
            + " found");
      }
      if (!first) {
        out.append(separator);
      }
      first = false;
      out.append(item);
    }
    return out.toString();
  }

  /** Python's {@code datetime.strftime} with the C locale's English names. */
  static String strftime(ZonedDateTime t, String format) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < format.length(); i++) {
      char c = format.charAt(i);
      if (c != '%' || i + 1 >= format.length()) {
        out.append(c);
        continue;
      }
      char d = format.charAt(++i);
      boolean unpadded = false;
      if (d == '-' && i + 1 < format.length()) { // glibc's "no padding" flag, e.g. %-d
        unpadded = true;
        d = format.charAt(++i);
      }
      switch (d) {
        case 'a' -> out.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.US));
        case 'A' -> out.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.US));
        case 'b', 'h' -> out.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.US));
        case 'B' -> out.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.US));
        case 'd' -> out.append(pad(t.getDayOfMonth(), 2, unpadded));
        case 'e' -> out.append(unpadded ? String.valueOf(t.getDayOfMonth())
            : String.format("%2d", t.getDayOfMonth()));
        case 'm' -> out.append(pad(t.getMonthValue(), 2, unpadded));
        case 'y' -> out.append(pad(t.getYear() % 100, 2, unpadded));
        case 'Y' -> out.append(t.getYear());
        case 'H' -> out.append(pad(t.getHour(), 2, unpadded));
        case 'I' -> out.append(pad(t.getHour() % 12 == 0 ? 12 : t.getHour() % 12, 2, unpadded));
        case 'M' -> out.append(pad(t.getMinute(), 2, unpadded));
        case 'S' -> out.append(pad(t.getSecond(), 2, unpadded));
        case 'p' -> out.append(t.getHour() < 12 ? "AM" : "PM");
        case 'j' -> out.append(pad(t.getDayOfYear(), 3, unpadded));
        case 'f' -> out.append(String.format("%06d", t.getNano() / 1000));
        case 'w' -> out.append(t.getDayOfWeek().getValue() % 7);
        case 'u' -> out.append(t.getDayOfWeek().getValue());
        case 'F' -> out.append(String.format("%04d-%02d-%02d", t.getYear(), t.getMonthValue(), t.getDayOfMonth()));
        case 'T' -> out.append(String.format("%02d:%02d:%02d", t.getHour(), t.getMinute(), t.getSecond()));
        case '%' -> out.append('%');
        default -> out.append('%').append(unpadded ? "-" : "").append(d);
      }
    }
    return out.toString();
  }

  private static String pad(int value, int width, boolean unpadded) {
    return unpadded ? String.valueOf(value) : String.format("%0" + width + "d", value);
  }
}
