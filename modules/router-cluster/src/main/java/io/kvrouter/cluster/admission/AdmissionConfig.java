package io.kvrouter.cluster.admission;

import com.typesafe.config.Config;
import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
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

  /** An ask's timeout: {@code deadline-margin} before the caller's deadline, or the ask timeout without one. */
  public Duration askTimeout(Duration remaining) {
    if (remaining == null) {
      return askTimeout;
    }
    Duration budget = remaining.minus(deadlineMargin);
    return budget.compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : budget;
  }

  /**
   * DEADLINE_EXCEEDED DEADLINE_TOO_SHORT for a Book whose caller has no more time left than the deadline margin (it
   * has given up already), else null.
   */
  public RoutingException deadlineTooShort(Duration remaining) {
    if (remaining == null || remaining.compareTo(deadlineMargin) > 0) {
      return null;
    }
    return new RoutingException(new RoutingError(RoutingError.Code.DEADLINE_EXCEEDED,
        RoutingError.DEADLINE_TOO_SHORT, "the call's deadline (" + remaining.toMillis() + " ms left) leaves no "
            + "time beyond the deadline margin (" + deadlineMargin.toMillis() + " ms) to book"));
  }

  public static AdmissionConfig fromConfig(Config config) {
    Config c = config.getConfig("kvrouter.admission");
    return new AdmissionConfig(
        new AdmissionSettings(c.getDuration("lease"), c.getDuration("heartbeat-timeout"),
            config.getBoolean("kvrouter.replication.enabled")),
        c.getDuration("ask-timeout"),
        c.getDuration("deadline-margin"),
        c.getDuration("expiry-interval"),
        config.getDuration("kvrouter.kv-index.approximate-ttl"),
        config.getInt("kvrouter.kv-index.approximate-max-entries"),
        config.getInt("kvrouter.kv-index.blocks-per-kv-block"));
  }
}
