package io.kvrouter.core.admission;

/** Wall-clock milliseconds; injectable so lease and heartbeat tests advance time instead of sleeping. */
@FunctionalInterface
public interface Clock {
  long millis();

  Clock SYSTEM = System::currentTimeMillis;
}
