package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelClient;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.testkit.Requests;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.ShardRegion.CurrentShardRegionState;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.Test;

/** A call that names a model nobody registered answers as for an unknown model and leaves nothing behind. */
class UnknownModelTest {
  @Test
  void callsOnUnknownModelsCreateNoFacadeViewIndexOrEntity() {
    try (TestCluster cluster = TestCluster.start(Clock.SYSTEM)) {
      cluster.modelWithWorkers("real", "round_robin", "a");
      for (int i = 0; i < 200; i++) {
        String model = "nobody-" + i;
        ModelClient client = cluster.client(model);
        assertThatThrownBy(() -> client.selectWithoutAdmission(Requests.of(model, "", 64)))
            .isInstanceOf(RoutingException.class)
            .satisfies(e -> assertThat(((RoutingException) e).error().reason()).isEqualTo(RoutingError.UNKNOWN_MODEL));
        assertThat(reason(client.book(Requests.of(model, "r" + i, 64), null))).isEqualTo(RoutingError.UNKNOWN_MODEL);
        assertThat(reason(client.state(null))).isEqualTo(RoutingError.UNKNOWN_MODEL);
        assertThat(join(client.release("r" + i, 1, null)).applied()).isFalse();
        assertThat(join(client.markPrefillDone("r" + i, 1, null)).applied()).isFalse();
        assertThat(join(client.renew("r" + i, 1, null)).applied()).isFalse();
        assertThat(reason(client.deregister("w", null))).isEqualTo(RoutingError.UNKNOWN_WORKER);
      }
      assertThat(cluster.routing.modelsHeld()).containsExactly("real");
      assertThat(entities(cluster)).containsExactly("real");
    }
  }

  static String reason(CompletionStage<?> stage) {
    try {
      stage.toCompletableFuture().get();
      throw new AssertionError("expected a rejection");
    } catch (ExecutionException | CompletionException e) {
      return ((RoutingException) e.getCause()).error().reason();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  /** The admission entities running on this node, by entity id (= model). */
  static java.util.Set<String> entities(TestCluster cluster) {
    TestProbe<CurrentShardRegionState> probe = cluster.kit.createTestProbe();
    org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding.get(cluster.kit.system()).shardState()
        .tell(new GetShardRegionState(ModelAdmission.ENTITY_KEY, probe.getRef()));
    java.util.Set<String> ids = new java.util.TreeSet<>();
    probe.receiveMessage().getShards().forEach(shard -> ids.addAll(shard.getEntityIds()));
    return ids;
  }
}
