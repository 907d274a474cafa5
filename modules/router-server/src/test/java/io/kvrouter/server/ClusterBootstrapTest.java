package io.kvrouter.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorNotFound;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.Test;

/**
 * Main starts Pekko Management's cluster bootstrap when {@code kvrouter.cluster.bootstrap} (KVROUTER_BOOTSTRAP) names a
 * discovery method, and only then. Pekko Discovery's {@code config} method stands in for the Kubernetes API: it lists
 * the node's own management endpoint, so bootstrap (and nothing else: join-self is on but must not apply) forms the
 * cluster.
 */
class ClusterBootstrapTest {
  /** The actor ClusterBootstrap.start() creates (Pekko Management's bootstrap coordinator). */
  private static final String BOOTSTRAP_COORDINATOR = "/system/bootstrapCoordinator";
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  @Test
  void withBootstrapConfiguredTheNodeFormsItsClusterThroughBootstrapAndIsReady() throws IOException {
    int managementPort = freePort();
    try (RouterNode node = Main.init(ConfigFactory.parseString("""
        kvrouter.grpc.port = 0
        kvrouter.front.port = 0
        kvrouter.epp.port = 0
        kvrouter.epp.health-port = 0
        kvrouter.management.port = %d
        kvrouter.cluster.bootstrap = config
        pekko.management.cluster.bootstrap.contact-point-discovery {
          service-name = kvrouter-bootstrap-test
          required-contact-point-nr = 1
          stable-margin = 500ms
          interval = 200ms
        }
        pekko.discovery.config.services.kvrouter-bootstrap-test.endpoints = [
          { host = "127.0.0.1", port = %d }
        ]
        pekko.remote.artery.canonical.port = 0
        pekko.actor.serialize-messages = on
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.loglevel = WARNING
        """.formatted(managementPort, managementPort)))) {
      assertThat(coordinatorExists(node)).as("bootstrap coordinator").isTrue();
      Cluster cluster = Cluster.get(node.system());
      await().atMost(Duration.ofSeconds(60))
          .until(() -> cluster.selfMember().status() == MemberStatus.up());
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
          .until(() -> status(node.managementUrl() + "/ready") == 200);
      // bootstrap's own route reports the cluster it formed
      assertThat(body(node.managementUrl() + "/bootstrap/seed-nodes"))
          .contains(cluster.selfMember().address().toString());
    }
  }

  @Test
  void withoutBootstrapConfiguredNoBootstrapRunsAndTheNodeJoinsItself() {
    try (TestRouter router = TestRouter.start()) {
      assertThat(Cluster.get(router.node.system()).selfMember().status()).isEqualTo(MemberStatus.up());
      assertThat(coordinatorExists(router.node)).as("bootstrap coordinator").isFalse();
    }
  }

  @Test
  void bootstrapWithSeedNodesIsRejectedBeforeAnythingStarts() {
    assertThatThrownBy(() -> Main.init(ConfigFactory.parseString("""
        kvrouter.cluster.bootstrap = kubernetes
        kvrouter.cluster.seed-nodes = "127.0.0.1:25520"
        """)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("exclude each other");
  }

  private static boolean coordinatorExists(RouterNode node) {
    try {
      ActorRef coordinator = node.system().classicSystem().actorSelection(BOOTSTRAP_COORDINATOR)
          .resolveOne(Duration.ofSeconds(3)).toCompletableFuture().get(5, TimeUnit.SECONDS);
      return coordinator != null;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof ActorNotFound) {
        return false;
      }
      throw new AssertionError(e);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private static int status(String url) {
    try {
      return HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(2)).GET().build(),
          HttpResponse.BodyHandlers.discarding()).statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  private static String body(String url) {
    try {
      return HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).GET().build(),
          HttpResponse.BodyHandlers.ofString()).body();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
