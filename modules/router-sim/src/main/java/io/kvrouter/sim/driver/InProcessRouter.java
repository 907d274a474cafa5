package io.kvrouter.sim.driver;

import com.typesafe.config.ConfigFactory;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.server.Main;
import io.kvrouter.server.RouterNode;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/** A router node in this JVM on its embedded default, on ephemeral loopback ports, reading the given clock. */
public final class InProcessRouter implements AutoCloseable {
  private static final Duration STARTUP = Duration.ofSeconds(60);

  private final RouterNode node;
  private final RouterClients clients;

  private InProcessRouter(RouterNode node) {
    this.node = node;
    this.clients = RouterClients.using(node.grpcHost(), node.grpcPort(), node.system());
  }

  public static InProcessRouter start(Clock clock) {
    RouterNode node = Main.init(ConfigFactory.parseString("""
        kvrouter.grpc.host = "127.0.0.1"
        kvrouter.grpc.port = 0
        kvrouter.management.host = "127.0.0.1"
        kvrouter.management.port = 0
        kvrouter.front.port = 0
        kvrouter.epp.port = 0
        kvrouter.epp.health-port = 0
        pekko.remote.artery.canonical.hostname = "127.0.0.1"
        pekko.remote.artery.canonical.port = 0
        pekko.loglevel = WARNING
        """), clock);
    Cluster cluster = Cluster.get(node.system());
    long deadline = System.nanoTime() + STARTUP.toNanos();
    while (cluster.selfMember().status() != MemberStatus.up()) {
      if (System.nanoTime() > deadline) {
        node.close();
        throw new IllegalStateException("the in-process router did not join its cluster within " + STARTUP);
      }
      LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
    }
    return new InProcessRouter(node);
  }

  public RouterClients clients() {
    return clients;
  }

  public String address() {
    return node.grpcHost() + ":" + node.grpcPort();
  }

  @Override
  public void close() {
    clients.close();
    node.close();
  }
}
