package io.kvrouter.core.admission;

import java.time.Duration;

/** Per-node admission settings (from configuration). */
public record AdmissionSettings(Duration lease, Duration heartbeatTimeout) {
  public static final AdmissionSettings DEFAULTS = new AdmissionSettings(Duration.ofSeconds(300), Duration.ofSeconds(10));
}
