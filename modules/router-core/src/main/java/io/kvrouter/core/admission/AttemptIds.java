package io.kvrouter.core.admission;

/**
 * Time-ordered 64-bit attempt ids: {@code millis << 16} plus a counter, always above the last one issued and above
 * the floor a new incarnation starts from (the highest attempt its predecessor issued), so attempts stay unique
 * across restarts even when the clock has not moved or has gone back.
 */
final class AttemptIds {
  private long last;

  AttemptIds(long floor) {
    this.last = floor;
  }

  long next(long nowMillis) {
    last = Math.max(last + 1, nowMillis << 16);
    return last;
  }

  long last() {
    return last;
  }
}
