package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.server.transport.Binding;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * One region of three nodes in this JVM: every node's Select and Book answers name the node that hosts the model's
 * admission actor (Selection.owner_endpoint), and after that node leaves they name the survivor that took over.
 */
class OwnerEndpointTest {
  private static final Duration CONVERGE = Duration.ofSeconds(60);
  private static final String CONFIG = """
      kvrouter.regions.summary-interval = 100ms
      kvrouter.cluster.failure-detection.profile = loopback
      """;
  private static final List<TestRouter> nodes = new ArrayList<>();

  @BeforeAll
  static void startRegion() {
    nodes.add(TestRouter.start(Binding.NETTY, CONFIG));
    int seedPort = (Integer) Cluster.get(nodes.get(0).node.system()).selfMember().address().getPort().get();
    for (int i = 1; i < 3; i++) {
      nodes.add(TestRouter.start(Binding.NETTY, CONFIG + "kvrouter.cluster.seed-nodes = \"127.0.0.1:" + seedPort
          + "\"\n"));
    }
    await().atMost(CONVERGE).until(() -> nodes.stream().allMatch(node -> upMembers(node) == 3));
  }

  @AfterAll
  static void stop() {
    for (int i = nodes.size() - 1; i >= 0; i--) {
      nodes.get(i).close();
    }
  }

  private static int upMembers(TestRouter node) {
    int up = 0;
    for (var member : Cluster.get(node.node.system()).state().getMembers()) {
      up += member.status() == MemberStatus.up() ? 1 : 0;
    }
    return up;
  }

  private static String endpointOf(TestRouter node) {
    return "127.0.0.1:" + node.node.grpcPort();
  }

  private static TestRouter ownerOf(String model, List<TestRouter> among) {
    return among.stream().filter(n -> {
      var slot = n.node.cluster().slot(model);
      return slot != null && slot.hostsAdmission();
    }).findFirst().orElse(null);
  }

  private static RouteRequest request(String model, String requestId) {
    return RouteRequest.newBuilder().setModel(model).setRequestId(requestId).setIslTokens(64).build();
  }

  @Test
  void everyNodeNamesTheOwnerAndANewOwnerAfterTheOldOneLeft() {
    String model = "org/owned";
    join(nodes.get(0).workers.register(worker(model, "w1").build()));
    TestRouter owner = ownerOf(model, nodes);
    assertThat(owner).isNotNull();
    for (TestRouter node : nodes) {
      await().atMost(CONVERGE).until(() -> join(node.router.select(request(model, ""))).getOwnerEndpoint()
          .equals(endpointOf(owner)));
      Booking booking = join(node.router.book(request(model, "owned-" + node.node.grpcPort())));
      assertThat(booking.getSelection().getOwnerEndpoint()).isEqualTo(endpointOf(owner));
      assertThat(join(node.router.release(BookingRef.newBuilder().setModel(model)
          .setRequestId(booking.getRequestId()).setAttempt(booking.getAttempt()).build())).getApplied()).isTrue();
    }

    nodes.remove(owner);
    owner.close();
    await().atMost(CONVERGE).until(() -> ownerOf(model, nodes) != null);
    TestRouter next = ownerOf(model, nodes);
    for (TestRouter node : nodes) {
      await().atMost(CONVERGE).until(() -> join(node.router.select(request(model, ""))).getOwnerEndpoint()
          .equals(endpointOf(next)));
    }
  }
}
