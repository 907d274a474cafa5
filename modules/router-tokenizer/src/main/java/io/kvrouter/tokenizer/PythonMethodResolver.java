package io.kvrouter.tokenizer;

import com.hubspot.jinjava.objects.SafeString;
import java.beans.FeatureDescriptor;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Resolves, ahead of Jinjava's bean resolver, what chat templates call as Python: {@code str} methods
 * ({@code content.strip()}, {@code startswith}, {@code split}, ...), a string's negative index
 * ({@code content[-1]}), and {@code dict.get(key, default)} on any map. Everything else falls through to Jinjava.
 */
final class PythonMethodResolver extends ELResolver {

  @Override
  public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
    if (method == null) {
      return null;
    }
    Object[] args = params == null ? new Object[0] : params;
    String name = method.toString();
    if (base instanceof String || base instanceof SafeString) {
      String s = base.toString();
      Object result = stringMethod(s, name, args);
      if (result != NOT_HANDLED) {
        context.setPropertyResolved(true);
        return result;
      }
    } else if (base instanceof Map<?, ?> map && "get".equals(name) && (args.length == 1 || args.length == 2)) {
      context.setPropertyResolved(true);
      Object key = args[0];
      if (map.containsKey(key)) {
        return map.get(key);
      }
      return args.length == 2 ? args[1] : null;
    }
    return null;
  }

  private static final Object NOT_HANDLED = new Object();

  private static Object stringMethod(String s, String name, Object[] args) {
    int n = args.length;
    switch (name) {
      case "strip":
        return n <= 1 ? PythonStrings.strip(s, arg(args, 0), true, true) : NOT_HANDLED;
      case "lstrip":
        return n <= 1 ? PythonStrings.strip(s, arg(args, 0), true, false) : NOT_HANDLED;
      case "rstrip":
        return n <= 1 ? PythonStrings.strip(s, arg(args, 0), false, true) : NOT_HANDLED;
      case "startswith":
        return n == 1 ? PythonStrings.startsWith(s, args[0]) : NOT_HANDLED;
      case "endswith":
        return n == 1 ? PythonStrings.endsWith(s, args[0]) : NOT_HANDLED;
      case "split":
        return n <= 2 ? PythonStrings.split(s, arg(args, 0), n == 2 ? intArg(args[1]) : -1) : NOT_HANDLED;
      case "rsplit":
        return n <= 2 ? PythonStrings.rsplit(s, arg(args, 0), n == 2 ? intArg(args[1]) : -1) : NOT_HANDLED;
      case "splitlines":
        return n <= 1 ? PythonStrings.splitLines(s, n == 1 && Boolean.TRUE.equals(args[0])) : NOT_HANDLED;
      case "upper":
        return n == 0 ? s.toUpperCase(Locale.ROOT) : NOT_HANDLED;
      case "lower":
        return n == 0 ? s.toLowerCase(Locale.ROOT) : NOT_HANDLED;
      case "title":
        return n == 0 ? PythonStrings.title(s) : NOT_HANDLED;
      case "capitalize":
        return n == 0 ? PythonStrings.capitalize(s) : NOT_HANDLED;
      case "replace":
        return n == 2 || n == 3
            ? PythonStrings.replace(s, String.valueOf(args[0]), String.valueOf(args[1]), n == 3 ? intArg(args[2]) : -1)
            : NOT_HANDLED;
      case "find":
        return n == 1 ? s.indexOf(String.valueOf(args[0])) : NOT_HANDLED;
      case "rfind":
        return n == 1 ? s.lastIndexOf(String.valueOf(args[0])) : NOT_HANDLED;
      case "count":
        return n == 1 ? PythonStrings.count(s, String.valueOf(args[0])) : NOT_HANDLED;
      case "join":
        return n == 1 ? PythonStrings.join(s, args[0]) : NOT_HANDLED;
      case "removeprefix":
        return n == 1 ? (s.startsWith(String.valueOf(args[0])) ? s.substring(String.valueOf(args[0]).length()) : s)
            : NOT_HANDLED;
      case "removesuffix": {
        if (n != 1) {
          return NOT_HANDLED;
        }
        String suffix = String.valueOf(args[0]);
        return !suffix.isEmpty() && s.endsWith(suffix) ? s.substring(0, s.length() - suffix.length()) : s;
      }
      case "isspace":
        return n == 0 ? !s.isEmpty() && s.codePoints().allMatch(PythonStrings::isSpace) : NOT_HANDLED;
      case "isdigit":
        return n == 0 ? !s.isEmpty() && s.codePoints().allMatch(Character::isDigit) : NOT_HANDLED;
      case "isalpha":
        return n == 0 ? !s.isEmpty() && s.codePoints().allMatch(Character::isLetter) : NOT_HANDLED;
      case "isalnum":
        return n == 0 ? !s.isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit) : NOT_HANDLED;
      case "isupper":
        return n == 0 ? s.codePoints().anyMatch(Character::isUpperCase)
            && s.codePoints().noneMatch(Character::isLowerCase) : NOT_HANDLED;
      case "islower":
        return n == 0 ? s.codePoints().anyMatch(Character::isLowerCase)
            && s.codePoints().noneMatch(Character::isUpperCase) : NOT_HANDLED;
      default:
        return NOT_HANDLED;
    }
  }

  private static Object arg(Object[] args, int i) {
    return i < args.length ? args[i] : null;
  }

  private static int intArg(Object value) {
    if (value instanceof Number number) {
      return number.intValue();
    }
    throw new IllegalArgumentException("expected an integer, got " + PythonJson.typeName(value));
  }

  @Override
  public Object getValue(ELContext context, Object base, Object property) {
    // Python indexes a string from its end with a negative number; Jinjava resolves only non-negative ones
    if ((base instanceof String || base instanceof SafeString) && property instanceof Number index) {
      String s = base.toString();
      long i = index.longValue();
      if (i < 0 && -i <= s.length()) {
        context.setPropertyResolved(true);
        return String.valueOf(s.charAt((int) (s.length() + i)));
      }
    }
    return null;
  }

  @Override
  public Class<?> getType(ELContext context, Object base, Object property) {
    return null;
  }

  @Override
  public void setValue(ELContext context, Object base, Object property, Object value) {
    // read-only: templates never assign through this resolver
  }

  @Override
  public boolean isReadOnly(ELContext context, Object base, Object property) {
    return false;
  }

  @Override
  public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
    return null;
  }

  @Override
  public Class<?> getCommonPropertyType(ELContext context, Object base) {
    return null;
  }

  static List<String> names() {
    return List.of("strip", "lstrip", "rstrip", "startswith", "endswith", "split", "rsplit", "splitlines", "upper",
        "lower", "title", "capitalize", "replace", "find", "rfind", "count", "join", "removeprefix", "removesuffix",
        "isspace", "isdigit", "isalpha", "isalnum", "isupper", "islower");
  }
}
