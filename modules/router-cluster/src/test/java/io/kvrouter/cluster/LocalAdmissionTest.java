package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelClient;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import org.apache.pekko.actor.PoisonPill;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.junit.jupiter.api.Test;

/**
 * Commands skip the shard region while the model's admission actor runs on this node, and go through the region
 * again once it has stopped, which starts a new incarnation that takes the shortcut in turn.
 */
class LocalAdmissionTest {
  @Test
  void commandsGoStraightToALocalActorAndBackThroughTheRegionAfterItStops() {
    try (TestCluster cluster = TestCluster.start(Clock.SYSTEM)) {
      ModelClient client = cluster.modelWithWorkers("local", "round_robin", "a", "b");
      ActorRef<ModelAdmission.Command> first = Hosting.localAdmission(cluster.routing, client.model());
      assertThat(first).as("the actor registered itself when it started").isNotNull();
      assertThat(first.path().toString()).contains("/sharding/ModelAdmission/").endsWith("/local");

      BookingAnswer booked = join(client.book(Requests.of("local", "r1", 64), null));
      assertThat(join(client.release("r1", booked.attempt(), null)).applied()).isTrue();
      assertThat(join(client.release("r1", booked.attempt(), null)).applied()).isFalse();

      Adapter.toClassic(first).tell(PoisonPill.getInstance(), org.apache.pekko.actor.ActorRef.noSender());
      await().atMost(Duration.ofSeconds(10)).until(() -> Hosting.localAdmission(cluster.routing, client.model()) == null);

      // through the region: the shard starts a new incarnation (state is not recovered: register again)
      join(client.register(TestCluster.worker("c"), null));
      ActorRef<ModelAdmission.Command> second = Hosting.localAdmission(cluster.routing, client.model());
      assertThat(second).isNotNull().isNotEqualTo(first);
      BookingAnswer again = join(client.book(Requests.of("local", "r2", 64), null));
      assertThat(again.selection().rank().workerId()).isEqualTo("c");
      ModelSnapshot state = cluster.state(client);
      assertThat(state.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId).containsExactly("r2");
    }
  }
}
