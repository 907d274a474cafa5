package io.kvrouter.cluster;

import io.kvrouter.core.explain.DecisionLog;
import java.util.concurrent.ConcurrentHashMap;

/** This node's {@link DecisionLog} of each model it decided for, while the node holds the model. */
final class DecisionLogs {
  private final ExplainConfig config;
  private final ConcurrentHashMap<String, DecisionLog> logs = new ConcurrentHashMap<>();

  DecisionLogs(ExplainConfig config) {
    this.config = config;
  }

  /** The model's log, or null when recording is off. */
  DecisionLog of(String model) {
    return config.enabled() ? logs.computeIfAbsent(model, m -> new DecisionLog(config.recent())) : null;
  }

  void forget(String model) {
    logs.remove(model);
  }
}
