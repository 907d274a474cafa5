package io.kvrouter.cluster.replication;

import com.typesafe.config.Config;
import java.time.Duration;

/** The {@code kvrouter.replication} config block: how an owner replicates a model's state to its region. */
public record ReplicationConfig(boolean enabled, Duration interval, Duration resendAfter, int maxChunkBytes,
    Duration recoveryWindow, Duration recoveryQueryTimeout) {

  public ReplicationConfig {
    if (maxChunkBytes < 1024) {
      throw new IllegalArgumentException("kvrouter.replication.max-chunk-bytes must be at least 1024, got "
          + maxChunkBytes);
    }
  }

  public static ReplicationConfig fromConfig(Config config) {
    Config c = config.getConfig("kvrouter.replication");
    return new ReplicationConfig(c.getBoolean("enabled"), c.getDuration("interval"), c.getDuration("resend-after"),
        c.getBytes("max-chunk-bytes").intValue(), c.getDuration("recovery-window"),
        c.getDuration("recovery-query-timeout"));
  }
}
