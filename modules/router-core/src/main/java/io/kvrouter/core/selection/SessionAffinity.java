package io.kvrouter.core.selection;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.SessionMode;

/**
 * A request's session: its id and the affinity mode it asks for (the transports set these), and, filled in by the
 * admission state from the session's binding, the rank it is bound to and how strongly a soft binding is preferred.
 *
 * <p>{@code boundRank} is null at the edge and on advisory Selects (the published view carries no bindings); the
 * admission state sets it for a soft binding ({@link SessionMode#SOFT}), whose rank then costs {@code softFactor} times its
 * cost (and wins ties): {@link Selector} applies it between scoring and the pick. A hard binding is applied as a pin
 * instead.
 *
 * @param mode the mode the request asks for; {@link SessionMode#DEFAULT}: the model's {@code session_mode}
 */
public record SessionAffinity(String sessionId, SessionMode mode, Rank boundRank, double softFactor) {
  public SessionAffinity {
    if (sessionId == null || sessionId.isEmpty()) {
      throw new IllegalArgumentException("a session needs an id");
    }
    mode = mode == null ? SessionMode.DEFAULT : mode;
  }

  /** A session as a transport decoded it: no binding known yet. */
  public static SessionAffinity of(String sessionId, SessionMode mode) {
    return new SessionAffinity(sessionId, mode, null, 1);
  }

  /** This session preferring {@code rank} softly, its cost counting {@code factor} times. */
  public SessionAffinity preferring(Rank rank, double factor) {
    return new SessionAffinity(sessionId, mode, rank, factor);
  }
}
