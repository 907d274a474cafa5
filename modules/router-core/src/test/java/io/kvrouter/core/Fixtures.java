package io.kvrouter.core;

import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;

/** Small builders shared by router-core tests. */
public final class Fixtures {
  private Fixtures() {}

  public static WorkerConfig worker(String id) {
    return worker(id, 1);
  }

  public static WorkerConfig worker(String id, int dpSize) {
    return new WorkerConfig(id, 0, dpSize, 8192, 1000, 16, "http://" + id, "local", WorkerRole.AGGREGATED);
  }
}
