package io.kvrouter.cluster.replication;

import com.typesafe.config.Config;
import java.time.Duration;

/**
 * The {@code kvrouter.replication} config block: how an owner replicates a model's state to its region.
 * {@code waitForMajority}: the owner answers a Book, Release, MarkPrefillDone, Renew and membership change only once a
 * majority of its region holds it.
 */
public record ReplicationConfig(boolean enabled, Duration interval, Duration resendAfter, int maxChunkBytes,
    Duration recoveryWindow, Duration recoveryQueryTimeout, boolean waitForMajority) {

  public ReplicationConfig {
    if (maxChunkBytes < 1024) {
      throw new IllegalArgumentException("kvrouter.replication.max-chunk-bytes must be at least 1024, got "
          + maxChunkBytes);
    }
  }

  /** How many peers must hold a change before it is answered, in a region of {@code members} nodes (owner included). */
  public int peersToWaitFor(int members) {
    return enabled && waitForMajority ? members / 2 : 0;
  }

  /** How many copies (the owner's node's own included) a recovering actor hears from before it picks one. */
  public int copiesToHearFrom(int members) {
    return enabled && waitForMajority ? members / 2 + 1 : 0;
  }

  public static ReplicationConfig fromConfig(Config config) {
    Config c = config.getConfig("kvrouter.replication");
    return new ReplicationConfig(c.getBoolean("enabled"), c.getDuration("interval"), c.getDuration("resend-after"),
        c.getBytes("max-chunk-bytes").intValue(), c.getDuration("recovery-window"),
        c.getDuration("recovery-query-timeout"), c.getBoolean("wait-for-majority"));
  }
}
