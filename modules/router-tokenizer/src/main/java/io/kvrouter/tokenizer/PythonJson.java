package io.kvrouter.tokenizer;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Python's {@code json.dumps} output, byte for byte, for the values a chat template holds (maps, lists, strings,
 * numbers, booleans, null): HuggingFace templates print tool schemas with {@code tojson}, and transformers binds
 * {@code tojson} to {@code json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)}, so the
 * model sees Python's separators ({@code ", "} and {@code ": "}; {@code ","} between items once indented), its
 * escapes and its float repr, never Jackson's compact form.
 */
final class PythonJson {
  private PythonJson() {}

  /**
   * @param indent null for one line, an Integer (spaces) or a String (the indent itself) for one item per line
   * @param separators null for Python's defaults, else a two-element list (item separator, key separator)
   */
  static String dumps(Object value, Object indent, List<?> separators, boolean sortKeys, boolean ensureAscii) {
    String indentUnit = null;
    if (indent instanceof Number n) {
      indentUnit = " ".repeat(Math.max(0, n.intValue()));
    } else if (indent instanceof CharSequence s) {
      indentUnit = s.toString();
    } else if (indent != null) {
      throw new IllegalArgumentException("tojson: indent must be an integer or a string, got " + typeName(indent));
    }
    String itemSeparator = indentUnit == null ? ", " : ",";
    String keySeparator = ": ";
    if (separators != null) {
      if (separators.size() != 2) {
        throw new IllegalArgumentException("tojson: separators must hold two strings");
      }
      itemSeparator = String.valueOf(separators.get(0));
      keySeparator = String.valueOf(separators.get(1));
    }
    StringBuilder out = new StringBuilder();
    new Writer(out, indentUnit, itemSeparator, keySeparator, sortKeys, ensureAscii).write(value, 0);
    return out.toString();
  }

  private record Writer(StringBuilder out, String indent, String itemSeparator, String keySeparator,
                        boolean sortKeys, boolean ensureAscii) {
    void write(Object value, int depth) {
      if (depth > 512) {
        throw new IllegalArgumentException("tojson: value nested deeper than 512 levels");
      }
      if (value == null) {
        out.append("null");
      } else if (value instanceof Boolean b) {
        out.append(b ? "true" : "false");
      } else if (value instanceof CharSequence s) {
        string(s.toString());
      } else if (value instanceof Character c) {
        string(c.toString());
      } else if (value instanceof Number n) {
        out.append(number(n));
      } else if (value instanceof Map<?, ?> map) {
        map(map, depth);
      } else if (value instanceof Collection<?> collection) {
        list(new ArrayList<>(collection), depth);
      } else if (value instanceof Object[] array) {
        list(List.of(array), depth);
      } else {
        throw new IllegalArgumentException("tojson: Object of type " + typeName(value) + " is not JSON serializable");
      }
    }

    private void map(Map<?, ?> map, int depth) {
      if (map.isEmpty()) {
        out.append("{}");
        return;
      }
      Map<?, ?> entries = map;
      if (sortKeys) {
        TreeMap<String, Object> sorted = new TreeMap<>();
        map.forEach((k, v) -> sorted.put(key(k), v));
        entries = sorted;
      }
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> entry : entries.entrySet()) {
        if (!first) {
          out.append(itemSeparator);
        }
        first = false;
        newline(depth + 1);
        string(key(entry.getKey()));
        out.append(keySeparator);
        write(entry.getValue(), depth + 1);
      }
      newline(depth);
      out.append('}');
    }

    private void list(List<?> items, int depth) {
      if (items.isEmpty()) {
        out.append("[]");
        return;
      }
      out.append('[');
      for (int i = 0; i < items.size(); i++) {
        if (i > 0) {
          out.append(itemSeparator);
        }
        newline(depth + 1);
        write(items.get(i), depth + 1);
      }
      newline(depth);
      out.append(']');
    }

    private void newline(int depth) {
      if (indent != null) {
        out.append('\n');
        out.append(indent.repeat(depth));
      }
    }

    /** Python converts str, int, float, bool and None keys; anything else is a TypeError. */
    private static String key(Object key) {
      if (key instanceof CharSequence s) {
        return s.toString();
      }
      if (key == null) {
        return "null";
      }
      if (key instanceof Boolean b) {
        return b ? "true" : "false";
      }
      if (key instanceof Number n) {
        return number(n);
      }
      throw new IllegalArgumentException("tojson: keys must be str, int, float, bool or None, not " + typeName(key));
    }

    private void string(String s) {
      out.append('"');
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        switch (c) {
          case '"' -> out.append("\\\"");
          case '\\' -> out.append("\\\\");
          case '\n' -> out.append("\\n");
          case '\r' -> out.append("\\r");
          case '\t' -> out.append("\\t");
          case '\b' -> out.append("\\b");
          case '\f' -> out.append("\\f");
          default -> {
            if (c < 0x20 || (ensureAscii && c > 0x7e)) {
              // Python writes \\u with four lower-case hex digits; astral characters as their UTF-16 pair
              out.append(String.format("\\u%04x", (int) c));
            } else {
              out.append(c);
            }
          }
        }
      }
      out.append('"');
    }
  }

  static String number(Number n) {
    if (n instanceof Double || n instanceof Float) {
      return floatRepr(n.doubleValue());
    }
    if (n instanceof BigDecimal d) {
      return floatRepr(d.doubleValue());
    }
    if (n instanceof BigInteger || n instanceof Long || n instanceof Integer || n instanceof Short
        || n instanceof Byte) {
      return n.toString();
    }
    return floatRepr(n.doubleValue());
  }

  /** Python's {@code repr(float)}: shortest round-trip digits, scientific below 1e-4 and from 1e16. */
  static String floatRepr(double d) {
    if (Double.isNaN(d)) {
      return "NaN";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "Infinity" : "-Infinity";
    }
    if (d == 0) {
      return (1 / d < 0) ? "-0.0" : "0.0";
    }
    BigDecimal decimal = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
    String digits = decimal.unscaledValue().toString();
    int exponent = digits.length() - 1 - decimal.scale();
    String sign = d < 0 ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
      String plain = decimal.toPlainString();
      return sign + (plain.indexOf('.') < 0 ? plain + ".0" : plain);
    }
    String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    String exp = String.format("%02d", Math.abs(exponent));
    return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + exp;
  }

  static String typeName(Object value) {
    return value == null ? "NoneType" : value.getClass().getSimpleName();
  }
}
