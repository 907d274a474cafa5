package io.kvrouter.core.admission;

import java.time.Duration;

/**
 * Per-node admission settings (from configuration).
 *
 * @param replicated whether the owner records its changes for replication ({@code kvrouter.replication.enabled}; off
 *     only to measure what replication costs)
 */
public record AdmissionSettings(Duration lease, Duration heartbeatTimeout, boolean replicated) {
  public static final AdmissionSettings DEFAULTS = new AdmissionSettings(Duration.ofSeconds(300), Duration.ofSeconds(10));

  public AdmissionSettings(Duration lease, Duration heartbeatTimeout) {
    this(lease, heartbeatTimeout, true);
  }
}
