package io.kvrouter.core.admission;

/**
 * Time-ordered 64-bit attempt ids: {@code millis << 16} plus a counter, never below the last one issued. A restarted
 * actor (possibly on another node) starts from its own clock, so its attempts sort after the previous incarnation's
 * unless more than 65,536 bookings per millisecond ran ahead of the clock right before the restart.
 */
public final class AttemptIds {
  private long last;

  public long next(long nowMillis) {
    last = Math.max(last + 1, nowMillis << 16);
    return last;
  }
}
