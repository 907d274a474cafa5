package io.kvrouter.core.policy;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;

/** Parsing of policy parameter values: every bad value is INVALID_ARGUMENT INVALID_POLICY_PARAMETER naming it. */
final class PolicyParameters {
  private PolicyParameters() {}

  static double nonNegative(String key, String raw) {
    double value = parseDouble(key, raw);
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw bad(key, raw);
    }
    return value;
  }

  /** Null when {@code raw} is null or empty; else a finite value ≥ 0. */
  static Double optionalNonNegative(String key, String raw) {
    return raw == null || raw.isEmpty() ? null : nonNegative(key, raw);
  }

  /** Null when {@code raw} is null or empty; else a value in (0, 1]. */
  static Double optionalRatio(String key, String raw) {
    if (raw == null || raw.isEmpty()) {
      return null;
    }
    double value = parseDouble(key, raw);
    if (!(value > 0 && value <= 1)) {
      throw bad(key, raw, "a ratio in (0, 1]");
    }
    return value;
  }

  static Long optionalLong(String key, String raw) {
    return raw == null || raw.isEmpty() ? null : requiredLong(key, raw);
  }

  /** Null when {@code raw} is null or empty; else an integer ≥ {@code min}. */
  static Long optionalAtLeast(String key, String raw, long min) {
    Long value = optionalLong(key, raw);
    if (value != null && value < min) {
      throw bad(key, raw, "an integer of at least " + min);
    }
    return value;
  }

  static long requiredLong(String key, String raw) {
    try {
      return Long.parseLong(raw);
    } catch (NumberFormatException | NullPointerException e) {
      throw bad(key, raw);
    }
  }

  static double parseDouble(String key, String raw) {
    try {
      return Double.parseDouble(raw);
    } catch (NumberFormatException | NullPointerException e) {
      throw bad(key, raw);
    }
  }

  static RoutingException bad(String key, String raw) {
    return RoutingError.invalid(RoutingError.INVALID_POLICY_PARAMETER,
        "policy parameter '" + RoutingError.echo(key) + "' has an invalid value '"
            + RoutingError.echo(raw) + "'").toException();
  }

  static RoutingException bad(String key, String raw, String expected) {
    return RoutingError.invalid(RoutingError.INVALID_POLICY_PARAMETER,
        "policy parameter '" + RoutingError.echo(key) + "' has an invalid value '"
            + RoutingError.echo(raw) + "': expected " + expected).toException();
  }

  static RoutingException invalid(String message) {
    return RoutingError.invalid(RoutingError.INVALID_POLICY_PARAMETER, message).toException();
  }
}
