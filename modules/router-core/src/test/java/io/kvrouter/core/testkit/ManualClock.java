package io.kvrouter.core.testkit;

import io.kvrouter.core.admission.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A clock that moves only when told to; thread-safe so an actor and a test can share it. */
public final class ManualClock implements Clock {
  private final AtomicLong now;

  public ManualClock(long startMillis) {
    this.now = new AtomicLong(startMillis);
  }

  @Override
  public long millis() {
    return now.get();
  }

  public void advance(Duration by) {
    now.addAndGet(by.toMillis());
  }
}
