package io.kvrouter.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Pure parsing helpers for the CLI's option values. Every method throws {@link IllegalArgumentException} with a
 * message fit for a usage error; the commands turn it into a picocli {@code ParameterException}.
 */
public final class Args {

  private Args() {}

  static final long UINT32_MAX = 0xFFFF_FFFFL;

  /** A {@code host:port} pair (an IPv6 host may be written in brackets: {@code [::1]:50051}). */
  public record Target(String host, int port) {
    @Override
    public String toString() {
      return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }
  }

  public static Target parseTarget(String text) {
    String s = text == null ? "" : text.trim();
    int colon = s.lastIndexOf(':');
    if (colon <= 0 || colon == s.length() - 1) {
      throw new IllegalArgumentException("target must be host:port, got '" + text + "'");
    }
    String host = s.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    } else if (host.indexOf(':') >= 0) {
      throw new IllegalArgumentException("an IPv6 target must be written [host]:port, got '" + text + "'");
    }
    if (host.isEmpty()) {
      throw new IllegalArgumentException("target has an empty host: '" + text + "'");
    }
    int port;
    try {
      port = Integer.parseInt(s.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("target port is not a number: '" + text + "'");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("target port out of range 1..65535: '" + text + "'");
    }
    return new Target(host, port);
  }

  private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)?");

  /** {@code 5s}, {@code 500ms}, {@code 1.5s}, {@code 2m}, {@code 1h}, a bare number of seconds, or ISO-8601 {@code PT5S}. */
  public static Duration parseDuration(String text) {
    String s = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
    Duration d;
    if (s.startsWith("pt") || s.startsWith("p")) {
      try {
        d = Duration.parse(s.toUpperCase(Locale.ROOT));
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("not a duration: '" + text + "'");
      }
    } else {
      Matcher m = DURATION.matcher(s);
      if (!m.matches()) {
        throw new IllegalArgumentException("not a duration (e.g. 5s, 500ms, 2m): '" + text + "'");
      }
      double value = Double.parseDouble(m.group(1));
      String unit = m.group(2) == null ? "s" : m.group(2);
      double millis = switch (unit) {
        case "ms" -> value;
        case "s" -> value * 1_000;
        case "m" -> value * 60_000;
        case "h" -> value * 3_600_000;
        default -> throw new IllegalStateException(unit);
      };
      d = Duration.ofNanos(Math.round(millis * 1_000_000));
    }
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException("duration must be positive: '" + text + "'");
    }
    return d;
  }

  /** Comma- (or whitespace-) separated token ids, each an unsigned 32-bit integer, as the int bit pattern. */
  public static int[] parseTokens(String text) {
    List<String> parts = splitList(text, "--tokens");
    int[] out = new int[parts.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = (int) parseUnsigned32(parts.get(i), "token id");
    }
    return out;
  }

  /** Comma-separated block hashes, each an unsigned 64-bit integer in decimal or {@code 0x} hex. */
  public static long[] parseBlockHashes(String text) {
    List<String> parts = splitList(text, "--block-hashes");
    long[] out = new long[parts.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = parseUnsigned64(parts.get(i), "block hash");
    }
    return out;
  }

  /** Comma-separated names, blanks dropped, order kept. */
  public static List<String> parseNames(String text) {
    List<String> out = new ArrayList<>();
    if (text == null) {
      return out;
    }
    for (String p : text.split(",")) {
      String t = p.trim();
      if (!t.isEmpty()) {
        out.add(t);
      }
    }
    return out;
  }

  /**
   * {@code key=value} pairs into an ordered map. The value may itself contain {@code =} (the first one splits) and
   * may be empty; the key may not. A key given twice is an error rather than a silent overwrite.
   */
  public static Map<String, String> parseParams(List<String> pairs) {
    Map<String, String> out = new LinkedHashMap<>();
    if (pairs == null) {
      return out;
    }
    for (String pair : pairs) {
      int eq = pair.indexOf('=');
      if (eq < 0) {
        throw new IllegalArgumentException("--param must be key=value, got '" + pair + "'");
      }
      String key = pair.substring(0, eq).trim();
      String value = pair.substring(eq + 1).trim();
      if (key.isEmpty()) {
        throw new IllegalArgumentException("--param has an empty key: '" + pair + "'");
      }
      if (out.putIfAbsent(key, value) != null) {
        throw new IllegalArgumentException("--param key given twice: '" + key + "'");
      }
    }
    return out;
  }

  public static long parseUnsigned32(String text, String what) {
    String s = text.trim();
    long v;
    try {
      v = s.startsWith("0x") || s.startsWith("0X") ? Long.parseLong(s.substring(2), 16) : Long.parseLong(s);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(what + " is not a number: '" + text + "'");
    }
    if (v < 0 || v > UINT32_MAX) {
      throw new IllegalArgumentException(what + " out of range 0.." + UINT32_MAX + ": '" + text + "'");
    }
    return v;
  }

  public static long parseUnsigned64(String text, String what) {
    String s = text.trim();
    try {
      if (s.startsWith("0x") || s.startsWith("0X")) {
        return Long.parseUnsignedLong(s.substring(2), 16);
      }
      return Long.parseUnsignedLong(s);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(what + " is not an unsigned 64-bit number: '" + text + "'");
    }
  }

  private static List<String> splitList(String text, String option) {
    List<String> out = new ArrayList<>();
    if (text != null) {
      for (String p : text.split("[,\\s]+")) {
        if (!p.isEmpty()) {
          out.add(p);
        }
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException(option + " needs at least one value");
    }
    return out;
  }
}
