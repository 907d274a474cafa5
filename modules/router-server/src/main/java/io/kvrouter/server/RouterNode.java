package io.kvrouter.server;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.epp.EndpointPicker;
import io.kvrouter.front.Front;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * A running router node: its actor system, routing layer, HTTP front, endpoint picker and bound ports. Closing it
 * leaves the cluster.
 */
public final class RouterNode implements AutoCloseable {
  private final ActorSystem<Void> system;
  private final RouterCluster cluster;
  private final String grpcHost;
  private final int grpcPort;
  private final String managementHost;
  private final int managementPort;
  private final Front front;
  private final EndpointPicker picker;

  RouterNode(ActorSystem<Void> system, RouterCluster cluster, String grpcHost, int grpcPort, String managementHost,
      int managementPort, Front front, EndpointPicker picker) {
    this.system = system;
    this.cluster = cluster;
    this.grpcHost = grpcHost;
    this.grpcPort = grpcPort;
    this.managementHost = managementHost;
    this.managementPort = managementPort;
    this.front = front;
    this.picker = picker;
  }

  /** The node's endpoint picker (Envoy ext_proc), or null when {@code kvrouter.epp.enabled} is off. */
  public EndpointPicker picker() {
    return picker;
  }

  /** The node's HTTP front, or null when {@code kvrouter.front.enabled} is off. */
  public Front front() {
    return front;
  }

  /** The front's base URL ({@code http://host:port}); the front must be on. */
  public String httpUrl() {
    if (front == null) {
      throw new IllegalStateException("the HTTP front is off on this node");
    }
    return "http://" + front.address().getHostString() + ":" + front.port();
  }

  public ActorSystem<Void> system() {
    return system;
  }

  public RouterCluster cluster() {
    return cluster;
  }

  public String grpcHost() {
    return grpcHost;
  }

  public int grpcPort() {
    return grpcPort;
  }

  public String managementUrl() {
    return "http://" + managementHost + ":" + managementPort;
  }

  @Override
  public void close() {
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(Duration.ofSeconds(30).toSeconds(), TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("router node did not stop", e);
    }
  }
}
