package io.kvrouter.core.model;

import io.kvrouter.core.error.RoutingError;
import java.util.Collection;
import java.util.Collections;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Placement taints: labels a worker declares at Register ({@code gpu=h100}, {@code zone=eu-1}, {@code spot}) and a
 * request requires (only workers with all of them are candidates) or prefers (their cost is multiplied). A taint is
 * {@code key} or {@code key=value}: the key 1 to 63 letters, digits, {@code . _ / -}, starting and ending with a
 * letter or digit; the value up to 63 of the same characters. Compared exactly (case-sensitive).
 */
public final class Taints {
  public static final int MAX_TAINTS = 32;
  private static final Pattern TAINT =
      Pattern.compile("[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?(=[A-Za-z0-9._/-]{0,63})?");

  private Taints() {}

  /**
   * The taints of {@code field}, sorted and immutable (empty for null).
   *
   * @throws io.kvrouter.core.error.RoutingException INVALID_ARGUMENT INVALID_TAINT for a malformed taint,
   *     TOO_MANY_ITEMS for more than {@link #MAX_TAINTS}
   */
  public static Set<String> parse(String field, Collection<String> taints) {
    if (taints == null || taints.isEmpty()) {
      return Set.of();
    }
    if (taints.size() > MAX_TAINTS) {
      throw RoutingError.invalid(RoutingError.TOO_MANY_ITEMS, taints.size() + " " + field + " exceed the limit of "
          + MAX_TAINTS).toException();
    }
    TreeSet<String> sorted = new TreeSet<>();
    for (String taint : taints) {
      if (taint == null || !TAINT.matcher(taint).matches()) {
        throw RoutingError.invalid(RoutingError.INVALID_TAINT, field + " '" + RoutingError.echo(taint)
            + "' is not key or key=value (letters, digits, . _ / -; the key starting and ending with a letter or "
            + "digit, each at most 63 characters)").toException();
      }
      sorted.add(taint);
    }
    return Collections.unmodifiableSortedSet(sorted);
  }
}
