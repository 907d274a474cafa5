package io.kvrouter.server;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.engines.Engines;
import io.kvrouter.engines.cluster.ClusterEngineSink;
import io.kvrouter.server.metrics.RouterMetrics;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Starts the node's engines (router-engines): every node hosts engine connectors the region places on it; a node
 * with {@code KVROUTER_ENGINES} or Kubernetes discovery also asks for its engines to run. Their series join the
 * node's metrics.
 */
final class EnginesWiring {
  private EnginesWiring() {}

  static Engines start(ActorSystem<?> system, RouterCluster routing, RouterMetrics metrics) {
    int blocksPerKvBlock = system.settings().config().getInt("kvrouter.kv-index.blocks-per-kv-block");
    Engines engines = Engines.start(system, new ClusterEngineSink(routing, blocksPerKvBlock));
    engines.meters().bindTo(metrics.registry());
    return engines;
  }
}
