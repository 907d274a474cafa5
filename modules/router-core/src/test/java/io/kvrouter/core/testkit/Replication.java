package io.kvrouter.core.testkit;

import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.replication.ReplicaDelta;
import java.util.List;

/** Replication helpers for tests that drain one unbounded delta at a time. */
public final class Replication {
  private Replication() {}

  /** Everything that changed since the last drain as one delta (no size budget), or null when nothing did. */
  public static ReplicaDelta drainOne(AdmissionState state, long nowMillis) {
    List<ReplicaDelta> deltas = state.drainReplicaDeltas(nowMillis, Integer.MAX_VALUE);
    if (deltas.size() > 1) {
      throw new IllegalStateException("an unbounded drain gave " + deltas.size() + " deltas");
    }
    return deltas.isEmpty() ? null : deltas.get(0);
  }
}
