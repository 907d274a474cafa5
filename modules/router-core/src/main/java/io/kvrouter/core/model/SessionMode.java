package io.kvrouter.core.model;

/** How a session keeps to its bound rank. */
public enum SessionMode {
  /** The model's policy parameter {@code session_mode} decides. */
  DEFAULT,
  /** A preference weighed against the cost: the bound rank's cost counts {@code session_soft_factor} times. */
  SOFT,
  /** The bound rank or nothing; a bound rank that is gone or no longer eligible is replaced once. */
  HARD;

  /** The mode named {@code wire} ("soft", "hard"; "" or "default": DEFAULT), or null when it names none. */
  public static SessionMode fromWireName(String wire) {
    if (wire == null) {
      return null;
    }
    return switch (wire.trim().toLowerCase(java.util.Locale.ROOT)) {
      case "", "default" -> DEFAULT;
      case "soft" -> SOFT;
      case "hard" -> HARD;
      default -> null;
    };
  }

  public String wireName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
