package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelStateReport;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.selection.SelectionView;
import java.util.Map;
import org.apache.pekko.actor.PoisonPill;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.junit.jupiter.api.Test;

/**
 * A new incarnation of a model's admission actor takes a newer epoch, so its first views win over every view of the
 * old incarnation however high their versions, on every node; a late view of the old incarnation changes nothing.
 */
class EpochTest {
  @Test
  void aNewIncarnationsViewWinsOverTheOldOnesHigherVersion() {
    try (TestRegion region = TestRegion.start(3)) {
      TestRegion.Node host = region.node(1);
      String model = Hosting.modelHostedOn(host, region.node(0), "epoch", "w1", "w2");
      for (int i = 0; i < 30; i++) {
        join(host.client(model).setPolicy(i % 2 == 0 ? "round_robin" : "least_in_flight", Map.of(), null));
      }
      SelectionView old = host.view(model);
      assertThat(old.version()).isGreaterThan(30);
      await().atMost(TestRegion.TIMEOUT).until(() -> region.live().stream().allMatch(n -> {
        SelectionView view = n.view(model);
        return view != null && view.epoch() == old.epoch() && view.version() == old.version();
      }));

      // the actor stops without handing anything on; the next command starts a new incarnation, which recovers
      ActorRef<ModelAdmission.Command> actor = Hosting.localAdmission(host, model);
      Adapter.toClassic(actor).tell(PoisonPill.getInstance(), org.apache.pekko.actor.ActorRef.noSender());
      await().atMost(TestRegion.TIMEOUT).until(() -> Hosting.localAdmission(host, model) != actor);
      ModelStateReport recovered = join(region.node(2).client(model).state(null));
      assertThat(recovered.snapshot().epoch()).isGreaterThan(old.epoch());
      assertThat(recovered.snapshot().viewVersion()).isLessThan(old.version());
      assertThat(recovered.snapshot().workers()).hasSize(2);

      await().atMost(TestRegion.TIMEOUT).until(() -> region.live().stream().allMatch(n -> {
        SelectionView view = n.view(model);
        return view != null && view.epoch() == recovered.snapshot().epoch()
            && view.workers().keySet().equals(old.workers().keySet());
      }));
      for (TestRegion.Node node : region.live()) {
        assertThat(node.routing().slot(model).publish(old)).as("the old view on %s", node).isFalse();
        assertThat(node.view(model).epoch()).isEqualTo(recovered.snapshot().epoch());
      }
    }
  }
}
