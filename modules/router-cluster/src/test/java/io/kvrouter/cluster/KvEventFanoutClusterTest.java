package io.kvrouter.cluster;

import io.kvrouter.cluster.kvevents.KvEventFanout;
import static io.kvrouter.cluster.KvEventFanoutTest.blocks;
import static io.kvrouter.cluster.KvEventFanoutTest.chain;
import static io.kvrouter.cluster.KvEventFanoutTest.stored;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.typesafe.config.ConfigFactory;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Three nodes of one region in one JVM (loopback, port 0, {@code serialize-messages = on}), one manual clock: the
 * two halves of one (worker, rank) stream, published in reverse order through two different nodes, end applied in
 * order with no gap on every node; a real gap then clears the rank on every node once the window has passed.
 * Event k stores block k chained under block k - 1, so a half applied out of order would leave its blocks without
 * a parent.
 */
class KvEventFanoutClusterTest {
  static final int NODES = 3;
  static final Duration WAIT = Duration.ofSeconds(20);
  static final String MODEL = "kv-region";
  static final Rank W0 = new Rank("w", 0);

  final ManualClock clock = new ManualClock(1_000_000);
  final List<ActorTestKit> kits = new ArrayList<>();
  final List<RouterCluster> nodes = new ArrayList<>();

  @BeforeEach
  void startRegion() {
    for (int i = 0; i < NODES; i++) {
      kits.add(ActorTestKit.create("kvrouter-region", ConfigFactory.load()));
    }
    Address first = Cluster.get(kits.get(0).system()).selfMember().address();
    for (ActorTestKit kit : kits) {
      Cluster.get(kit.system()).manager().tell(Join.create(first));
    }
    await().atMost(WAIT).until(() -> kits.stream().allMatch(kit -> {
      var members = Cluster.get(kit.system()).state().getMembers();
      int up = 0;
      for (var member : members) {
        up += member.status() == MemberStatus.up() ? 1 : 0;
      }
      return up == NODES;
    }));
    for (ActorTestKit kit : kits) {
      nodes.add(RouterCluster.init(kit.system(), clock));
    }
    awaitTopicReachesEveryNode();
  }

  /** The topic is at most once and learns its peers by gossip: publish only once every node's instance is known. */
  private void awaitTopicReachesEveryNode() {
    for (ActorTestKit kit : kits) {
      String region = Cluster.get(kit.system()).selfMember().dataCenter();
      ActorRef<Topic.Command<KvEventFanout.Published>> observer =
          kit.spawn(Topic.create(KvEventFanout.Published.class, KvEventFanout.topicName(region)));
      TestProbe<Topic.TopicStats> stats = kit.createTestProbe();
      await().atMost(WAIT).until(() -> {
        observer.tell(Topic.getTopicStats(stats.ref()));
        return stats.receiveMessage().topicInstanceCount() == NODES;
      });
    }
  }

  @AfterEach
  void stopRegion() {
    for (int i = kits.size() - 1; i >= 0; i--) {
      kits.get(i).shutdownTestKit();
    }
  }

  @Test
  void reverseHalvesThroughTwoNodesApplyInOrderOnEveryNode() {
    join(nodes.get(0).client(MODEL).register(TestCluster.worker("w"), null));
    await().atMost(WAIT).until(() -> kits.stream().allMatch(kit -> {
      SelectionView view = RouterCluster.get(kit.system()).view(MODEL);
      return view != null && view.worker("w") != null;
    }));
    reverseHalvesThenARealGap();
  }

  private void reverseHalvesThenARealGap() {
    // The second half through node 1 first: every node holds it (no events yet, and 6 does not start a stream).
    assertThat(nodes.get(1).kvEvents().publish(MODEL, "w", 0, chain(6, 10)))
        .isEqualTo(new KvEventFanout.Applied(0, 5, 0));
    awaitEveryNode(node -> node.kvEvents().reorderCounters(MODEL).held() == 5);

    // The first half through node 2: it applies, and lets the held half through, on every node.
    assertThat(nodes.get(2).kvEvents().publish(MODEL, "w", 0, chain(1, 5)))
        .isEqualTo(new KvEventFanout.Applied(5, 0, 0));
    awaitEveryNode(node -> deviceBlocks(node, blocks(1, 10)) == 10);
    for (RouterCluster node : nodes) {
      ModelKvIndex index = node.kvIndex(MODEL);
      assertThat(index.gapCount()).isZero();
      assertThat(index.events().droppedStoreCount()).isZero();
      assertThat(node.kvEvents().reorderCounters(MODEL).held()).isZero();
    }

    // Event 11 is lost: 12 waits on every node while the clock stands still, then every node clears the rank.
    assertThat(nodes.get(1).kvEvents().publish(MODEL, "w", 0, List.of(stored(12, 100, null))))
        .isEqualTo(new KvEventFanout.Applied(0, 1, 0));
    awaitEveryNode(node -> node.kvEvents().reorderCounters(MODEL).held() == 1);
    clock.advance(Duration.ofMillis(
        KvEventFanout.reorderSettings(kits.get(0).system().settings().config()).windowMillis()));
    awaitEveryNode(node -> node.kvIndex(MODEL).gapCount() == 1);
    for (RouterCluster node : nodes) {
      assertThat(deviceBlocks(node, blocks(1, 10))).isZero();
      assertThat(deviceBlocks(node, blocks(100, 100))).isEqualTo(1);
      assertThat(node.kvEvents().reorderCounters(MODEL).gaps()).isEqualTo(1);
    }
  }

  private void awaitEveryNode(Predicate<RouterCluster> condition) {
    await().atMost(WAIT).until(() -> nodes.stream().allMatch(condition));
  }

  private static int deviceBlocks(RouterCluster node, long[] hashes) {
    ModelKvIndex index = node.kvIndex(MODEL);
    return index == null ? 0 : index.overlap(W0, hashes, 0).device();
  }
}
