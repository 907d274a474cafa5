package io.kvrouter.cluster;

import io.kvrouter.cluster.kvevents.KvEventFanout;
import io.kvrouter.cluster.kvevents.KvEventRecord;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.indexer.KvEventSequencer;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.testkit.ManualClock;
import java.time.Duration;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * One node, real actors, {@code serialize-messages = on}: batches of one (worker, rank) published out of order are
 * applied in event-id order; a real gap clears the rank once the reorder window has passed (the node's tick), or at
 * once when the hold bound is hit. Event k stores block k chained under block k - 1, so a batch applied out of order
 * would leave its Stored events without a parent.
 */
class KvEventFanoutTest {
  static final Rank W0 = new Rank("w", 0);

  static long tokens(long block) {
    return 0x9E3779B97F4A7C15L * block;
  }

  static KvEventRecord stored(long id, long block, Long parent) {
    return new KvEventRecord(id, KvEventRecord.Kind.STORED, StorageTier.DEVICE, parent, new long[] {block},
        new long[] {tokens(block)});
  }

  /** Events {@code from..to}, event k storing block k under block k - 1. */
  static List<KvEventRecord> chain(long from, long to) {
    return LongStream.rangeClosed(from, to).mapToObj(id -> stored(id, id, id == 1 ? null : id - 1)).toList();
  }

  static long[] blocks(long from, long to) {
    return LongStream.rangeClosed(from, to).map(KvEventFanoutTest::tokens).toArray();
  }

  static int deviceBlocks(ModelKvIndex index, long[] hashes) {
    return index.overlap(W0, hashes, 0).device();
  }

  @Test
  void batchesOutOfOrderApplyInOrderAndARealGapClearsTheRankAfterTheWindow() {
    ManualClock clock = new ManualClock(1_000_000);
    try (TestCluster cluster = TestCluster.start(clock)) {
      join(cluster.client("kv-order").register(TestCluster.worker("w"), null));
      KvEventFanout fanout = cluster.routing.kvEvents();

      // The stream's second half first: held (the rank has no events yet and 6 is not a stream's start).
      assertThat(fanout.publish("kv-order", "w", 0, chain(6, 10))).isEqualTo(new KvEventFanout.Applied(0, 5, 0));
      assertThat(fanout.reorderCounters("kv-order").held()).isEqualTo(5);
      assertThat(fanout.publish("kv-order", "w", 0, chain(1, 5))).isEqualTo(new KvEventFanout.Applied(5, 0, 0));
      ModelKvIndex index = cluster.routing.kvIndex("kv-order");
      assertThat(deviceBlocks(index, blocks(1, 10))).isEqualTo(10);
      assertThat(fanout.reorderCounters("kv-order")).isEqualTo(new KvEventSequencer.Counters(0, 5, 0));

      // A batch sent again changes nothing.
      assertThat(fanout.publish("kv-order", "w", 0, chain(4, 7))).isEqualTo(new KvEventFanout.Applied(0, 0, 0));

      // Event 11 is lost: 12 (a new chain under the root) waits for it while the window lasts (the clock stands
      // still), then the node's tick declares the gap.
      assertThat(fanout.publish("kv-order", "w", 0, List.of(stored(12, 100, null))))
          .isEqualTo(new KvEventFanout.Applied(0, 1, 0));
      assertThat(fanout.reorderCounters("kv-order").held()).isEqualTo(1);
      clock.advance(Duration.ofMillis(
          KvEventFanout.reorderSettings(cluster.kit.system().settings().config()).windowMillis()));
      await().atMost(Duration.ofSeconds(5)).until(() -> index.gapCount() == 1);
      assertThat(deviceBlocks(index, blocks(1, 10))).as("the gap cleared the rank").isZero();
      assertThat(deviceBlocks(index, blocks(100, 100))).isEqualTo(1);
      assertThat(fanout.reorderCounters("kv-order")).isEqualTo(new KvEventSequencer.Counters(0, 6, 1));
      assertThat(index.events().droppedStoreCount()).isZero();
    }
  }

  @Test
  void holdingMoreThanTheBoundIsAGapAtOnce() {
    try (TestCluster cluster = TestCluster.start(new ManualClock(1_000_000),
        "kvrouter.kv-index.reorder-max-held = 2")) {
      join(cluster.client("kv-bound").register(TestCluster.worker("w"), null));
      KvEventFanout fanout = cluster.routing.kvEvents();
      fanout.publish("kv-bound", "w", 0, chain(1, 2));
      assertThat(fanout.publish("kv-bound", "w", 0, List.of(stored(4, 100, null), stored(5, 101, 100L))))
          .isEqualTo(new KvEventFanout.Applied(0, 2, 0));
      // A third early event: 3 is declared lost without waiting for the window (the clock stands still).
      assertThat(fanout.publish("kv-bound", "w", 0, List.of(stored(7, 200, null))))
          .isEqualTo(new KvEventFanout.Applied(0, 1, 1));
      ModelKvIndex index = cluster.routing.kvIndex("kv-bound");
      assertThat(index.gapCount()).isEqualTo(1);
      assertThat(deviceBlocks(index, blocks(1, 2))).isZero();
      assertThat(index.overlap(W0, new long[] {tokens(100), tokens(101)}, 0).device())
          .isEqualTo(2);
    }
  }
}
