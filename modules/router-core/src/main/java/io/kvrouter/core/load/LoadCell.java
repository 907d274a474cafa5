package io.kvrouter.core.load;

import java.util.concurrent.atomic.AtomicReference;

/**
 * One rank's load, shared between the admission actor (the only writer of booked load) and every inline reader.
 * Each figure set is one immutable record swapped atomically; torn reads across ranks are acceptable.
 */
public final class LoadCell {
  private final AtomicReference<RankLoad> booked = new AtomicReference<>(RankLoad.IDLE);
  private volatile ReportedLoad reported;

  public RankLoad booked() {
    return booked.get();
  }

  /** Applies {@code load} if its sequence number is newer than the current one; returns whether it did. */
  public boolean apply(RankLoad load) {
    while (true) {
      RankLoad current = booked.get();
      if (load.seq() <= current.seq()) {
        return false;
      }
      if (booked.compareAndSet(current, load)) {
        return true;
      }
    }
  }

  /** The last engine report, or null if this rank never reported. */
  public ReportedLoad reported() {
    return reported;
  }

  public void report(ReportedLoad load) {
    reported = load;
  }
}
