package io.kvrouter.bench;

import com.typesafe.config.ConfigFactory;
import io.kvrouter.server.Main;
import io.kvrouter.server.RouterNode;

/** A one-node router for benchmarks: gRPC, management and remoting on loopback, ephemeral ports. */
public final class LoopbackNode {
  private LoopbackNode() {}

  /** Starts a node with {@code config} (HOCON) over the loopback settings. */
  public static RouterNode start(String config) {
    return Main.init(ConfigFactory.parseString(config + """

        kvrouter.grpc.host = 127.0.0.1
        kvrouter.grpc.port = 0
        kvrouter.management.host = 127.0.0.1
        kvrouter.management.port = 0
        kvrouter.front.port = 0
        kvrouter.epp.port = 0
        kvrouter.epp.health-port = 0
        pekko.remote.artery.canonical.hostname = 127.0.0.1
        pekko.remote.artery.canonical.port = 0
        pekko.loglevel = WARNING
        """));
  }
}
