package io.kvrouter.core.selection;

import io.kvrouter.core.model.Rank;

/**
 * A request's session: its id and the affinity mode it asks for (the transports set these), and, filled in by the
 * admission state from the session's binding, the rank it is bound to and how strongly a soft binding is preferred.
 *
 * <p>{@code boundRank} is null at the edge and on advisory Selects (the published view carries no bindings); the
 * admission state sets it for a soft binding ({@link Mode#SOFT}), whose rank then costs {@code softFactor} times its
 * cost (and wins ties): {@link Selector} applies it between scoring and the pick. A hard binding is applied as a pin
 * instead.
 *
 * @param mode the mode the request asks for; {@link Mode#DEFAULT}: the model's {@code session_mode}
 */
public record SessionAffinity(String sessionId, Mode mode, Rank boundRank, double softFactor) {
  /** How a session keeps to its bound rank. */
  public enum Mode {
    /** The model's policy parameter {@code session_mode} decides. */
    DEFAULT,
    /** A preference weighed against the cost: the bound rank's cost counts {@code session_soft_factor} times. */
    SOFT,
    /** The bound rank or nothing; a bound rank that is gone or no longer eligible is replaced once. */
    HARD;

    /** The mode named {@code wire} ("soft", "hard"; "" or "default": DEFAULT), or null when it names none. */
    public static Mode fromWireName(String wire) {
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

  public SessionAffinity {
    if (sessionId == null || sessionId.isEmpty()) {
      throw new IllegalArgumentException("a session needs an id");
    }
    mode = mode == null ? Mode.DEFAULT : mode;
  }

  /** A session as a transport decoded it: no binding known yet. */
  public static SessionAffinity of(String sessionId, Mode mode) {
    return new SessionAffinity(sessionId, mode, null, 1);
  }

  /** This session preferring {@code rank} softly, its cost counting {@code factor} times. */
  public SessionAffinity preferring(Rank rank, double factor) {
    return new SessionAffinity(sessionId, mode, rank, factor);
  }
}
