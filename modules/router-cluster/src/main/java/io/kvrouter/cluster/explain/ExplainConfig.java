package io.kvrouter.cluster.explain;

import com.typesafe.config.Config;
import io.kvrouter.core.explain.DecisionLog;

/** The {@code kvrouter.explain} config block: whether decisions are recorded, and how many per model and node. */
public record ExplainConfig(boolean enabled, int recent) {

  public ExplainConfig {
    DecisionLog.requireValidRecent(recent);
  }

  public static ExplainConfig fromConfig(Config config) {
    Config c = config.getConfig("kvrouter.explain");
    return new ExplainConfig(c.getBoolean("enabled"), c.getInt("recent"));
  }
}
