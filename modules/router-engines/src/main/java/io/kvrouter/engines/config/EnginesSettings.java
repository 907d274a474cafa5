package io.kvrouter.engines.config;

import com.typesafe.config.Config;
import io.kvrouter.engines.connector.ConnectorSettings;
import java.time.Duration;

/**
 * {@code kvrouter.engines} (reference.conf): where this node's engines come from and how the region keeps one
 * connector per engine.
 *
 * @param file the engines file, empty for none ({@code KVROUTER_ENGINES})
 * @param ensureInterval how often every node tells each engine it lists to run (and restarts a dead node's)
 * @param forgetAfter an engine no node has listed for this long is retired: connector stopped, worker deregistered
 * @param statusInterval how often a connector publishes its status to the region
 */
public record EnginesSettings(String file, Duration filePollInterval, Duration ensureInterval, Duration forgetAfter,
    Duration statusInterval, boolean kubernetes, String kubernetesNamespace, String kubernetesLabelSelector,
    Duration kubernetesResync, ConnectorSettings connector) {

  public static EnginesSettings fromConfig(Config config) {
    Config engines = config.getConfig("kvrouter.engines");
    Config k8s = engines.getConfig("kubernetes");
    return new EnginesSettings(engines.getString("file").trim(), engines.getDuration("file-poll-interval"),
        engines.getDuration("ensure-interval"), engines.getDuration("forget-after"),
        engines.getDuration("status-interval"), k8s.getBoolean("enabled"), k8s.getString("namespace").trim(),
        k8s.getString("label-selector").trim(), k8s.getDuration("resync-interval"),
        ConnectorSettings.fromConfig(config));
  }

  /** Whether this node has an engine source of its own (else it only hosts connectors other nodes ask for). */
  public boolean hasSource() {
    return !file.isEmpty() || kubernetes;
  }
}
