package io.kvrouter.core.admission;

import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.model.Rank;

/**
 * What a Book did to its session's binding: {@code BOUND} (the session had none: bound to the booked rank),
 * {@code KEPT} (booked on its bound rank), {@code REBOUND} (bound to another rank: a soft binding outweighed by the
 * cost, or a hard binding whose rank was gone or no longer eligible; {@code previous} names the rank it left).
 *
 * @param mode the mode the Book ran in (the request's, else the model's)
 */
public record SessionOutcome(String sessionId, SessionMode mode, Kind kind, Rank previous) {
  public enum Kind { BOUND, KEPT, REBOUND }
}
