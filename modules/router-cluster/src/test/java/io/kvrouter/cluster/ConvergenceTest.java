package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static io.kvrouter.cluster.TestCluster.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.selection.SelectionView;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Views converge on every node of the region: after a change, on a node that joins late, and when a model empties. */
class ConvergenceTest {
  private static Set<String> workersSeenBy(TestRegion.Node node, String model) {
    SelectionView view = node.view(model);
    return view == null ? Set.of() : view.workers().keySet();
  }

  @Test
  void viewChangesReachEveryNodeALateNodeConvergesAndAnEmptiedModelIsForgotten() {
    try (TestRegion region = TestRegion.start(3)) {
      TestRegion.Node host = region.node(0);
      String model = Hosting.modelHostedOn(host, region.node(1), "conv", "w1", "w2");
      await().atMost(TestRegion.TIMEOUT).until(() -> region.live().stream()
          .allMatch(n -> workersSeenBy(n, model).equals(Set.of("w1", "w2"))));

      // a change on the owner reaches the other nodes: membership and policy
      join(host.client(model).register(worker("w3"), null));
      join(host.client(model).deregister("w1", null));
      join(host.client(model).setPolicy("least_in_flight", Map.of(), null));
      SelectionView owners = host.view(model);
      await().atMost(TestRegion.TIMEOUT).until(() -> region.live().stream().allMatch(n -> {
        SelectionView view = n.view(model);
        return view != null && view.epoch() == owners.epoch() && view.version() == owners.version()
            && view.workers().keySet().equals(Set.of("w2", "w3"))
            && view.policy().policy().wireName().equals("least_in_flight");
      }));

      // a node that joins late gets a snapshot
      TestRegion.Node late = region.join();
      await().atMost(TestRegion.TIMEOUT).until(() -> workersSeenBy(late, model).equals(Set.of("w2", "w3")));
      assertThat(late.view(model).version()).isEqualTo(owners.version());

      // the model's last worker leaves: every node forgets it
      join(region.node(1).client(model).deregister("w2", null));
      join(late.client(model).deregister("w3", null));
      await().atMost(TestRegion.TIMEOUT).until(() -> region.live().stream()
          .allMatch(n -> n.view(model) == null && !n.sees(model)));
    }
  }
}
