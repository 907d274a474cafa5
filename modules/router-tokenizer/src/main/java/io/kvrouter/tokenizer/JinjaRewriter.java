package io.kvrouter.tokenizer;

import java.util.ArrayList;
import java.util.List;

/**
 * Rewrites a template's expressions so Jinjava groups them as Python's jinja2 does, by adding parentheses where the
 * two grammars disagree:
 *
 * <ul>
 *   <li>{@code not} binds looser than comparisons, {@code in} and tests in jinja2 ({@code not x is defined} is
 *       {@code not (x is defined)}, {@code not a == b} is {@code not (a == b)}); Jinjava applies it to the next
 *       operand only. Each {@code not} (other than {@code not in} and {@code is not}) gets its operand, up to the next
 *       {@code and}, {@code or}, {@code if}, {@code else} or separator at its level, in parentheses.</li>
 *   <li>A keyword argument's value extends to the next comma in jinja2 ({@code namespace(n=messages|length - 1)});
 *       Jinjava binds {@code n=} tighter than arithmetic. Each keyword argument's value is put in parentheses.</li>
 * </ul>
 *
 * Text outside {@code {{ }}} and {@code {% %}}, comments and {@code raw} blocks are left as they are.
 */
final class JinjaRewriter {
  private JinjaRewriter() {}

  static String rewrite(String source) {
    StringBuilder out = new StringBuilder(source.length() + 64);
    int i = 0;
    int n = source.length();
    while (i < n) {
      int open = source.indexOf('{', i);
      if (open < 0 || open + 1 >= n) {
        out.append(source, i, n);
        break;
      }
      char kind = source.charAt(open + 1);
      if (kind != '{' && kind != '%' && kind != '#') {
        out.append(source, i, open + 1);
        i = open + 1;
        continue;
      }
      out.append(source, i, open);
      if (kind == '#') {
        int close = source.indexOf("#}", open + 2);
        int end = close < 0 ? n : close + 2;
        out.append(source, open, end);
        i = end;
        continue;
      }
      String closer = kind == '{' ? "}}" : "%}";
      int close = findCloser(source, open + 2, closer);
      if (close < 0) {
        out.append(source, open, n);
        break;
      }
      int innerStart = open + 2;
      int innerEnd = close;
      if (innerStart < innerEnd && (source.charAt(innerStart) == '-' || source.charAt(innerStart) == '+')) {
        innerStart++;
      }
      if (innerEnd > innerStart && (source.charAt(innerEnd - 1) == '-' || source.charAt(innerEnd - 1) == '+')) {
        innerEnd--;
      }
      String inner = source.substring(innerStart, innerEnd);
      out.append(source, open, innerStart);
      if (kind == '%' && inner.trim().equals("raw")) {
        int endRaw = findEndRaw(source, close + 2);
        out.append(inner).append(source, innerEnd, endRaw);
        i = endRaw;
        continue;
      }
      out.append(rewriteExpression(inner));
      out.append(source, innerEnd, close + 2);
      i = close + 2;
    }
    return out.toString();
  }

  private static int findEndRaw(String source, int from) {
    int at = from;
    while (true) {
      int open = source.indexOf("{%", at);
      if (open < 0) {
        return source.length();
      }
      int close = source.indexOf("%}", open);
      if (close < 0) {
        return source.length();
      }
      String tag = source.substring(open + 2, close).replace("-", "").replace("+", "").trim();
      if (tag.equals("endraw")) {
        return open;
      }
      at = close + 2;
    }
  }

  private static int findCloser(String s, int from, String closer) {
    char quote = 0;
    for (int i = from; i < s.length(); i++) {
      char c = s.charAt(i);
      if (quote != 0) {
        if (c == '\\') {
          i++;
        } else if (c == quote) {
          quote = 0;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (s.startsWith(closer, i)) {
        return i;
      }
    }
    return -1;
  }

  // --- expressions ------------------------------------------------------------------------------------------------

  private static final java.util.regex.Pattern REVERSED = java.util.regex.Pattern.compile("\\[\\s*:\\s*:\\s*-\\s*1\\s*]");

  private record Token(String text, boolean name, boolean string, int start, int end) {
    boolean is(String s) {
      return !string && text.equals(s);
    }

    boolean opener() {
      return !string && (text.equals("(") || text.equals("[") || text.equals("{"));
    }

    boolean closer() {
      return !string && (text.equals(")") || text.equals("]") || text.equals("}"));
    }
  }

  static String rewriteExpression(String original) {
    // Jinjava has no slice step; a reversed copy is the one templates use (Qwen3: messages[::-1])
    String expression = REVERSED.matcher(original).replaceAll("|reverse|list");
    List<Token> tokens = tokenize(expression);
    if (tokens == null) {
      return expression; // not tokenizable here: leave it to Jinjava's own parser and its error
    }
    boolean needed = false;
    for (Token t : tokens) {
      if (t.is("not") || t.is("=")) {
        needed = true;
        break;
      }
    }
    if (!needed) {
      return expression;
    }
    int[] opens = new int[tokens.size() + 1];
    int[] closes = new int[tokens.size() + 1];
    for (int i = 0; i < tokens.size(); i++) {
      Token t = tokens.get(i);
      if (t.is("not") && !(i + 1 < tokens.size() && tokens.get(i + 1).is("in"))
          && !(i > 0 && tokens.get(i - 1).is("is"))) {
        int end = operandEnd(tokens, i + 1, true);
        if (end > i + 1) {
          opens[i + 1]++;
          closes[end]++;
        }
      } else if (t.is("=") && i >= 1 && tokens.get(i - 1).name() && i >= 2
          && (tokens.get(i - 2).is("(") || tokens.get(i - 2).is(",")) && insideCall(tokens, i - 2)) {
        int end = operandEnd(tokens, i + 1, false);
        if (end > i + 2) { // one token needs no parentheses, and Jinjava misreads "name=(literal)"
          opens[i + 1]++;
          closes[end]++;
        }
      }
    }
    // parentheses go into the original text at the tokens' offsets, so everything else keeps its spelling
    StringBuilder out = new StringBuilder(expression.length() + 16);
    int copied = 0;
    for (int i = 0; i <= tokens.size(); i++) {
      int at = i == tokens.size() ? expression.length() : tokens.get(i).start();
      if (closes[i] > 0) {
        int previousEnd = i == 0 ? 0 : tokens.get(i - 1).end();
        out.append(expression, copied, previousEnd);
        out.append(")".repeat(closes[i]));
        copied = previousEnd;
      }
      if (opens[i] > 0) {
        out.append(expression, copied, at);
        out.append("(".repeat(opens[i]));
        copied = at;
      }
    }
    out.append(expression, copied, expression.length());
    return out.toString();
  }

  /** Whether the bracket at {@code at} (or the one enclosing the comma at {@code at}) is a call's parenthesis. */
  private static boolean insideCall(List<Token> tokens, int at) {
    int depth = 0;
    for (int i = at; i >= 0; i--) {
      Token t = tokens.get(i);
      if (t.closer() && i != at) {
        depth++;
      } else if (t.opener()) {
        if (depth == 0) {
          return t.is("(") && i > 0 && (tokens.get(i - 1).name() || tokens.get(i - 1).is(")"))
              && !isKeyword(tokens.get(i - 1).text());
        }
        depth--;
      }
    }
    return false;
  }

  private static boolean isKeyword(String s) {
    return switch (s) {
      case "and", "or", "not", "in", "is", "if", "else", "elif" -> true;
      default -> false;
    };
  }

  /**
   * Where an operand starting at {@code from} ends: the first token at its own bracket level that is a separator
   * ({@code ,}, {@code :}, a closing bracket of an enclosing level, {@code if}, {@code else}, and, for a
   * {@code not}'s operand, {@code and} and {@code or}), or the end.
   */
  private static int operandEnd(List<Token> tokens, int from, boolean stopAtBoolean) {
    int depth = 0;
    for (int i = from; i < tokens.size(); i++) {
      Token t = tokens.get(i);
      if (t.opener()) {
        depth++;
      } else if (t.closer()) {
        if (depth == 0) {
          return i;
        }
        depth--;
      } else if (depth == 0) {
        if (t.is(",") || t.is(":") || t.is("if") || t.is("else") || t.is("=")
            || (stopAtBoolean && (t.is("and") || t.is("or")))) {
          return i;
        }
      }
    }
    return tokens.size();
  }

  private static List<Token> tokenize(String s) {
    List<Token> tokens = new ArrayList<>();
    int i = 0;
    int n = s.length();
    while (i < n) {
      char c = s.charAt(i);
      if (Character.isWhitespace(c)) {
        i++;
      } else if (c == '\'' || c == '"') {
        int j = i + 1;
        while (j < n && s.charAt(j) != c) {
          if (s.charAt(j) == '\\') {
            j++;
          }
          j++;
        }
        if (j >= n) {
          return null;
        }
        tokens.add(new Token(s.substring(i, j + 1), false, true, i, j + 1));
        i = j + 1;
      } else if (Character.isLetter(c) || c == '_') {
        int j = i + 1;
        while (j < n && (Character.isLetterOrDigit(s.charAt(j)) || s.charAt(j) == '_')) {
          j++;
        }
        tokens.add(new Token(s.substring(i, j), true, false, i, j));
        i = j;
      } else if (Character.isDigit(c)) {
        int j = i + 1;
        while (j < n && (Character.isLetterOrDigit(s.charAt(j)) || s.charAt(j) == '.' || s.charAt(j) == '_')) {
          j++;
        }
        tokens.add(new Token(s.substring(i, j), false, false, i, j));
        i = j;
      } else {
        String two = i + 1 < n ? s.substring(i, i + 2) : "";
        if (two.equals("==") || two.equals("!=") || two.equals("<=") || two.equals(">=") || two.equals("//")
            || two.equals("**")) {
          tokens.add(new Token(two, false, false, i, i + 2));
          i += 2;
        } else {
          tokens.add(new Token(String.valueOf(c), false, false, i, i + 1));
          i++;
        }
      }
    }
    return tokens;
  }
}
