package io.kvrouter.cluster;

import static io.kvrouter.engines.testkit.Tokens.run;
import static io.kvrouter.engines.testkit.Tokens.stored;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.model.Rank;
import io.kvrouter.engines.Engines;
import io.kvrouter.engines.cluster.ClusterEngineSink;
import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.connector.EngineConnector;
import io.kvrouter.engines.connector.RankCheckpoint;
import io.kvrouter.engines.connector.RankStatus;
import io.kvrouter.engines.testkit.MetricsServer;
import io.kvrouter.engines.testkit.Pages;
import io.kvrouter.engines.testkit.PythonPublisher;
import io.kvrouter.engines.testkit.Tokens;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three nodes of one region in this JVM (router-cluster's {@code TestRegion}: loopback, every message serialized),
 * every node listing the same engine in its engines file, the engine the independent Python publisher: exactly one
 * node runs the engine's connector; killing that node moves the connector to a survivor, and the batches published
 * before, during and after the kill all reach every survivor's index. With a checkpoint in the dead connector's last
 * status the new one continues it (replay, same event ids: no gap anywhere); without one it clears, counted.
 */
@Timeout(180)
class EngineFailoverTest {
  static final String MODEL = "org/llama-8b";
  static final String WORKER = "vllm-0";
  static final int BS = 16;
  static final Duration FAILOVER_BOUND = Duration.ofSeconds(30);

  @TempDir
  Path dir;

  @Test
  void theConnectorMovesWhenItsNodeDiesAndContinuesFromItsCheckpoint() throws Exception {
    failover(true);
  }

  /**
   * A node that dies before any status with a checkpoint left it (status interval of an hour): the next connector
   * cannot continue the ids, so it jumps them; every survivor's index declares that a gap (counted), clears the rank,
   * and the replay from the engine's first batch rebuilds it.
   */
  @Test
  void withoutACheckpointTheIndexIsClearedCountedAndRebuiltFromTheReplay() throws Exception {
    failover(false);
  }

  private void failover(boolean checkpointed) throws Exception {
    try (PythonPublisher publisher = PythonPublisher.start("vllm-map", 1);
        MetricsServer metrics = new MetricsServer()) {
      metrics.page(Pages.page("vllm.prom"));
      Path file = dir.resolve("engines.yaml");
      Files.writeString(file, """
          engines:
            - model: %s
              worker_id: %s
              kind: vllm
              base_url: %s
              kv_events: %s
              kv_events_replay: %s
              kv_events_topic: kv-events
          """.formatted(MODEL, WORKER, metrics.baseUrl(), publisher.kvEvents(), publisher.kvEventsReplay()));
      String config = """
          kvrouter.engines {
            file = "%s"
            ensure-interval = 300ms
            status-interval = 300ms
            scrape-interval = 300ms
            forget-after = 20s
            status-interval = %s
          }
          """.formatted(file.toString().replace("\\", "\\\\"), checkpointed ? "300ms" : "1h");
      try (TestRegion region = TestRegion.start(3, config)) {
        List<Engines> engines = new ArrayList<>();
        for (TestRegion.Node node : region.live()) {
          engines.add(Engines.start(node.kit().system(), new ClusterEngineSink(node.routing(), 4)));
        }
        EngineKey key = new EngineKey(MODEL, WORKER);
        await().atMost(Duration.ofSeconds(60)).until(() -> hosts(region, engines, key).size() == 1
            && connector(region, engines, key).phase() == EngineConnector.Phase.RUNNING
            && connector(region, engines, key).status().rank(0).connected());
        TestRegion.Node victim = hosts(region, engines, key).get(0);
        // the KV event topic is at most once: publish only once every node's subscription reached every other
        awaitKvEventTopicOnEveryNode(region);

        List<int[]> prompts = new ArrayList<>();
        long parent = -1;
        for (int i = 0; i < 5; i++) {
          parent = publishLink(publisher, prompts, i, parent);
        }
        awaitEveryNodeHolds(region, prompts);
        long seqBeforeKill = connector(region, engines, key).status().rank(0).lastSeq();
        assertThat(seqBeforeKill).isEqualTo(4);

        if (checkpointed) {
          // the status published after batch 4 (with its checkpoint) reached every node before the crash
          await().atMost(Duration.ofSeconds(20)).until(() -> engines.stream().allMatch(e -> {
            RankCheckpoint checkpoint = e.board().checkpoints(key).get(0);
            return checkpoint != null && checkpoint.lastSeq() == 4;
          }));
        } else {
          assertThat(engines).allMatch(e -> e.board().checkpoints(key).isEmpty());
        }
        region.kill(victim);
        // published while no connector runs: PUB drops them, the replay buffer keeps them
        for (int i = 5; i < 10; i++) {
          parent = publishLink(publisher, prompts, i, parent);
        }
        long killed = System.nanoTime();
        await().atMost(FAILOVER_BOUND).until(() -> hosts(region, engines, key).size() == 1
            && connector(region, engines, key).phase() == EngineConnector.Phase.RUNNING);
        for (int i = 10; i < 15; i++) {
          parent = publishLink(publisher, prompts, i, parent);
        }
        awaitEveryNodeHolds(region, prompts);
        Duration failover = Duration.ofNanos(System.nanoTime() - killed);
        System.out.println("engine connector failover: node removed, then every survivor's index whole after "
            + failover.toMillis() + " ms");
        assertThat(failover).isLessThan(FAILOVER_BOUND);

        EngineConnector moved = connector(region, engines, key);
        RankStatus rank = moved.status().rank(0);
        assertThat(rank.lastSeq()).isEqualTo(14);
        assertThat(rank.replays()).isPositive();
        if (checkpointed) {
          // the same ids as the dead connector's: nothing cleared, no gap anywhere
          assertThat(rank.clears()).isZero();
          assertThat(rank.batches()).isEqualTo(10);
          for (TestRegion.Node node : region.live()) {
            assertThat(node.routing().kvIndex(MODEL).gapCount()).isZero();
          }
        } else {
          // the jump: one gap on every survivor, and every batch the engine holds applied again
          assertThat(rank.attachedFromSeq()).isZero();
          assertThat(rank.batches()).isEqualTo(15);
          for (TestRegion.Node node : region.live()) {
            assertThat(node.routing().kvIndex(MODEL).gapCount()).isEqualTo(1);
          }
        }
        if (checkpointed) {
          // every survivor shows the engine's status, from the node running the connector now
          for (Engines each : engines) {
            if (isLive(region, each)) {
              await().atMost(Duration.ofSeconds(10)).until(() -> each.board().get(key) != null
                  && each.board().get(key).status().node().equals(moved.status().node()));
            }
          }
        }
      }
    }
  }

  /** Batch i stores one block chained under the previous batch's, so a batch lost or applied out of order shows. */
  private static long publishLink(PythonPublisher publisher, List<int[]> prompts, int i, long parent) {
    int[] tokens = run(1000 * i + 1, BS);
    int[] prompt = prompts.isEmpty() ? tokens : Tokens.concat(prompts.get(prompts.size() - 1), tokens);
    prompts.add(prompt);
    long hash = 100 + i;
    publisher.batch(stored(new Object[] {hash}, parent < 0 ? null : parent, tokens, BS));
    return hash;
  }

  private static void awaitEveryNodeHolds(TestRegion region, List<int[]> prompts) {
    int[] longest = prompts.get(prompts.size() - 1);
    await().atMost(Duration.ofSeconds(60)).until(() -> region.live().stream().allMatch(node -> {
      ModelKvIndex index = node.routing().kvIndex(MODEL);
      return index != null && index.overlap(new Rank(WORKER, 0), Tokens.routed(longest, BS),
          System.currentTimeMillis()).device() == prompts.size();
    }));
  }

  /** Every node's KV event topic (a system actor of KvEventFanout) knows the topic of every live node. */
  private static void awaitKvEventTopicOnEveryNode(TestRegion region) {
    int nodes = region.live().size();
    await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() -> region.live().stream().allMatch(node -> {
      org.apache.pekko.actor.ActorRef classic = Adapter.toClassic(node.kit().system())
          .actorSelection("/system/kv-events-topic").resolveOne(Duration.ofSeconds(5)).toCompletableFuture().join();
      ActorRef<Topic.Command<Object>> topic = Adapter.toTyped(classic);
      Topic.TopicStats stats = AskPattern.<Topic.Command<Object>, Topic.TopicStats>ask(topic, Topic::getTopicStats,
          Duration.ofSeconds(5), node.kit().system().scheduler()).toCompletableFuture().join();
      return stats.topicInstanceCount() >= nodes;
    }));
  }

  private static boolean isLive(TestRegion region, Engines engines) {
    return region.live().stream().anyMatch(node -> Engines.get(node.kit().system()) == engines);
  }

  private static List<TestRegion.Node> hosts(TestRegion region, List<Engines> engines, EngineKey key) {
    return region.live().stream()
        .filter(node -> Engines.get(node.kit().system()).placement().localConnectors().containsKey(key))
        .toList();
  }

  private static EngineConnector connector(TestRegion region, List<Engines> engines, EngineKey key) {
    for (TestRegion.Node node : region.live()) {
      Map<EngineKey, EngineConnector> local = Engines.get(node.kit().system()).placement().localConnectors();
      if (local.containsKey(key)) {
        return local.get(key);
      }
    }
    throw new AssertionError("no node runs " + key);
  }

}
