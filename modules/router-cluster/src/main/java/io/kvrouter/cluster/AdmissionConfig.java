package io.kvrouter.cluster;

import com.typesafe.config.Config;
import io.kvrouter.core.admission.AdmissionSettings;
import java.time.Duration;

/** The {@code kvrouter.admission} config block. */
public record AdmissionConfig(AdmissionSettings settings, Duration askTimeout, Duration deadlineMargin,
    Duration expiryInterval, Duration kvTtl, int kvMaxEntries, int kvBlocksPerKvBlock) {

  public static final String DISPATCHER = "kvrouter.admission.dispatcher";

  public AdmissionConfig {
    if (kvBlocksPerKvBlock < 1) {
      throw new IllegalArgumentException("kvrouter.kv-index.blocks-per-kv-block must be at least 1, got "
          + kvBlocksPerKvBlock);
    }
  }

  public static AdmissionConfig fromConfig(Config config) {
    Config c = config.getConfig("kvrouter.admission");
    return new AdmissionConfig(
        new AdmissionSettings(c.getDuration("lease"), c.getDuration("heartbeat-timeout")),
        c.getDuration("ask-timeout"),
        c.getDuration("deadline-margin"),
        c.getDuration("expiry-interval"),
        config.getDuration("kvrouter.kv-index.approximate-ttl"),
        config.getInt("kvrouter.kv-index.approximate-max-entries"),
        config.getInt("kvrouter.kv-index.blocks-per-kv-block"));
  }
}
