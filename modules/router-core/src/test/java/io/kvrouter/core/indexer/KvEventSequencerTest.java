package io.kvrouter.core.indexer;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.indexer.KvEventSequencer.Outcome;
import io.kvrouter.core.indexer.KvEventSequencer.Sequenced;
import io.kvrouter.core.indexer.KvEventSequencer.Settings;
import io.kvrouter.core.model.Rank;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * Event k of a stream stores block k chained under block k - 1, so an index fed out of order drops Stored events
 * (unknown parent) and one fed in order holds the whole chain: the overlap of the chain shows which happened.
 */
class KvEventSequencerTest {
  static final Rank A0 = new Rank("a", 0);
  static final Rank A1 = new Rank("a", 1);
  static final long T0 = 1_000_000L;
  static final long WINDOW = 50;
  static final int MAX_BLOCKS = Integer.MAX_VALUE;

  final AtomicLong clock = new AtomicLong(T0);
  final ModelKvIndex index = new ModelKvIndex(clock::get);

  KvEventSequencer sequencer(int maxHeld) {
    return new KvEventSequencer(index, new Settings(WINDOW, maxHeld), clock::get);
  }

  static long tokens(long block) {
    return 0x9E3779B97F4A7C15L * block;
  }

  /** Event {@code id} stores block {@code id} under block {@code id - 1} (the first under the root). */
  static Sequenced chained(long id) {
    return new Sequenced(id, new KvEvent.Stored(StorageTier.DEVICE, id == 1 ? null : id - 1,
        new long[] {id}, new long[] {tokens(id)}));
  }

  static List<Sequenced> chain(long from, long to) {
    return LongStream.rangeClosed(from, to).mapToObj(KvEventSequencerTest::chained).toList();
  }

  static long[] prompt(int blocks) {
    return LongStream.rangeClosed(1, blocks).map(KvEventSequencerTest::tokens).toArray();
  }

  int held(Rank rank) {
    return index.overlap(rank, prompt(64), clock.get()).device();
  }

  @Test
  void eventsInOrderApplyAtOnce() {
    KvEventSequencer sequencer = sequencer(16);
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(1, 3))).isEqualTo(new Outcome(3, 0, 0, 0, 0));
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(4, 5))).isEqualTo(new Outcome(2, 0, 0, 0, 0));
    assertThat(held(A0)).isEqualTo(5);
    assertThat(sequencer.counters().held()).isZero();
    assertThat(sequencer.counters().heldTotal()).isZero();
  }

  @Test
  void aLaterBatchArrivingFirstWaitsForTheEarlierOne() {
    KvEventSequencer sequencer = sequencer(16);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 2));
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(6, 8))).isEqualTo(new Outcome(0, 3, 0, 0, 0));
    assertThat(held(A0)).isEqualTo(2);
    assertThat(sequencer.counters().held()).isEqualTo(3);
    clock.addAndGet(WINDOW - 1);
    assertThat(sequencer.expire()).isZero();
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(3, 5))).isEqualTo(new Outcome(3, 0, 0, 3, 0));
    assertThat(held(A0)).isEqualTo(8);
    assertThat(sequencer.counters().held()).isZero();
    assertThat(sequencer.counters().heldTotal()).isEqualTo(3);
    assertThat(index.gapCount()).isZero();
    assertThat(index.events().droppedStoreCount()).isZero();
  }

  @Test
  void aStreamsSecondHalfArrivingFirstOnAFreshRankWaitsForItsStart() {
    KvEventSequencer sequencer = sequencer(16);
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(5, 8))).isEqualTo(new Outcome(0, 4, 0, 0, 0));
    assertThat(index.eventFedWorkers()).isEmpty();
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(1, 4))).isEqualTo(new Outcome(4, 0, 0, 4, 0));
    assertThat(held(A0)).isEqualTo(8);
    assertThat(index.gapCount()).isZero();
  }

  @Test
  void aFreshRanksFirstIdAboveOneStartsTheStreamAfterTheWindowWithoutAGap() {
    KvEventSequencer sequencer = sequencer(16);
    // An engine that numbered events before this node saw it (e.g. this node restarted).
    List<Sequenced> stream = List.of(new Sequenced(500, stored(1, null)), new Sequenced(501, stored(2, 1L)));
    assertThat(sequencer.offer(A0, MAX_BLOCKS, stream)).isEqualTo(new Outcome(0, 2, 0, 0, 0));
    clock.addAndGet(WINDOW);
    assertThat(sequencer.expire()).isZero();
    assertThat(held(A0)).isEqualTo(2);
    assertThat(sequencer.offer(A0, MAX_BLOCKS, List.of(new Sequenced(502, stored(3, 2L)))))
        .isEqualTo(new Outcome(1, 0, 0, 0, 0));
    assertThat(held(A0)).isEqualTo(3);
    assertThat(index.gapCount()).isZero();
  }

  static KvEvent stored(long block, Long parent) {
    return new KvEvent.Stored(StorageTier.DEVICE, parent, new long[] {block}, new long[] {tokens(block)});
  }

  @Test
  void duplicatesAreDropped() {
    KvEventSequencer sequencer = sequencer(16);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 3));
    sequencer.offer(A0, MAX_BLOCKS, chain(6, 6));
    // 2 and 3 were applied, 6 is held: only 4 and 5 are new.
    List<Sequenced> batch = new ArrayList<>(chain(2, 6));
    batch.add(chained(5));
    assertThat(sequencer.offer(A0, MAX_BLOCKS, batch)).isEqualTo(new Outcome(2, 0, 4, 1, 0));
    // A Removed reusing an applied id would have dropped block 3 and everything under it.
    assertThat(sequencer.offer(A0, MAX_BLOCKS,
        List.of(new Sequenced(3, new KvEvent.Removed(StorageTier.DEVICE, new long[] {3}))))).isEqualTo(
        new Outcome(0, 0, 1, 0, 0));
    assertThat(held(A0)).isEqualTo(6);
    assertThat(index.gapCount()).isZero();
  }

  @Test
  void aRealGapClearsTheRankOnceTheWindowHasPassed() {
    KvEventSequencer sequencer = sequencer(16);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 3));
    sequencer.offer(A1, MAX_BLOCKS, chain(1, 1));
    // Event 4 is lost; 5 stores a fresh chain under the root.
    sequencer.offer(A0, MAX_BLOCKS, List.of(new Sequenced(5, stored(100, null))));
    clock.addAndGet(WINDOW - 1);
    assertThat(sequencer.expire()).isZero();
    assertThat(held(A0)).isEqualTo(3);
    clock.addAndGet(1);
    assertThat(sequencer.expire()).isEqualTo(1);
    assertThat(index.gapCount()).isEqualTo(1);
    assertThat(sequencer.counters().gaps()).isEqualTo(1);
    assertThat(sequencer.counters().held()).isZero();
    assertThat(held(A0)).as("the rank was cleared before 5 applied").isZero();
    assertThat(index.overlap(A0, new long[] {tokens(100)}, clock.get()).device()).isEqualTo(1);
    assertThat(held(A1)).as("other ranks keep their blocks").isEqualTo(1);
    // The lost event arriving late is older than what was applied: dropped, the stream goes on.
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(4, 4))).isEqualTo(new Outcome(0, 0, 1, 0, 0));
    assertThat(sequencer.offer(A0, MAX_BLOCKS, List.of(new Sequenced(6, stored(101, 100L)))))
        .isEqualTo(new Outcome(1, 0, 0, 0, 0));
    assertThat(index.gapCount()).isEqualTo(1);
  }

  @Test
  void theWindowCountsFromEachEventsArrival() {
    KvEventSequencer sequencer = sequencer(16);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 1));
    sequencer.offer(A0, MAX_BLOCKS, List.of(new Sequenced(3, stored(3, null))));
    clock.addAndGet(WINDOW / 2);
    sequencer.offer(A0, MAX_BLOCKS, chain(5, 5));
    clock.addAndGet(WINDOW / 2);
    // 3 waited the window: 2 is lost. 5 has waited half of it, so 4 may still come.
    assertThat(sequencer.expire()).isEqualTo(1);
    assertThat(sequencer.counters().held()).isEqualTo(1);
    assertThat(sequencer.offer(A0, MAX_BLOCKS, List.of(new Sequenced(4, stored(4, 3L)))))
        .isEqualTo(new Outcome(1, 0, 0, 1, 0));
    assertThat(index.gapCount()).isEqualTo(1);
    assertThat(index.overlap(A0, new long[] {tokens(3), tokens(4), tokens(5)}, clock.get()).device())
        .isEqualTo(3);
  }

  @Test
  void holdingMoreThanTheBoundDeclaresTheLowestMissingIdsLost() {
    KvEventSequencer sequencer = sequencer(2);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 1));
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(3, 4))).isEqualTo(new Outcome(0, 2, 0, 0, 0));
    // A third early event: 2 is declared lost, 3 and 4 apply after the gap, 6 still waits for 5.
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(6, 6))).isEqualTo(new Outcome(0, 1, 0, 2, 1));
    assertThat(index.gapCount()).isEqualTo(1);
    assertThat(sequencer.counters().held()).isEqualTo(1);
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(5, 5))).isEqualTo(new Outcome(1, 0, 0, 1, 0));
    assertThat(index.events().droppedStoreCount())
        .as("3 was chained under the lost 2: it and the chain after it have no parent").isEqualTo(4);
    assertThat(sequencer.counters().gaps()).isEqualTo(1);
  }

  @Test
  void aBatchLargerThanTheBoundKeepsItsOwnOrder() {
    KvEventSequencer sequencer = sequencer(2);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 1));
    // 3..7 early, bound 2: 2 is lost once, then the batch's own events apply in order.
    Outcome outcome = sequencer.offer(A0, MAX_BLOCKS, chain(3, 7));
    assertThat(outcome).isEqualTo(new Outcome(5, 0, 0, 0, 1));
    assertThat(index.gapCount()).isEqualTo(1);
    assertThat(index.events().droppedStoreCount())
        .as("3 was chained under the lost 2: it and the chain after it have no parent").isEqualTo(5);
  }

  @Test
  void boundZeroTurnsReorderingOff() {
    KvEventSequencer sequencer = sequencer(0);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 2));
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(4, 4))).isEqualTo(new Outcome(1, 0, 0, 0, 1));
    assertThat(index.gapCount()).isEqualTo(1);
  }

  @Test
  void heldEventsOfARemovedWorkerAreDropped() {
    KvEventSequencer sequencer = sequencer(16);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 1));
    sequencer.offer(A0, MAX_BLOCKS, chain(3, 3));
    sequencer.offer(new Rank("b", 0), MAX_BLOCKS, chain(5, 5));
    index.removeWorker("a");
    sequencer.retainWorkers(worker -> !worker.equals("a"));
    assertThat(sequencer.ranksHolding()).containsExactly(new Rank("b", 0));
    clock.addAndGet(WINDOW);
    sequencer.expire();
    assertThat(index.eventFedWorkers()).containsExactly("b");
  }

  @Test
  void eachRankIsItsOwnSequence() {
    KvEventSequencer sequencer = sequencer(16);
    sequencer.offer(A0, MAX_BLOCKS, chain(1, 1));
    sequencer.offer(A1, MAX_BLOCKS, chain(3, 3));
    assertThat(sequencer.offer(A0, MAX_BLOCKS, chain(2, 2))).isEqualTo(new Outcome(1, 0, 0, 0, 0));
    assertThat(sequencer.ranksHolding()).containsExactly(A1);
  }

  /**
   * A stream cut into batches that arrive in any order, some twice, all within the window, ends applied whole:
   * every block chained, no gap, nothing held.
   */
  @Property(tries = 200)
  void batchesInAnyOrderWithinTheWindowApplyAsTheStream(@ForAll @IntRange(min = 1, max = 60) int events,
      @ForAll @IntRange(min = 1, max = 12) int batches, @ForAll long seed) {
    AtomicLong now = new AtomicLong(T0);
    ModelKvIndex fresh = new ModelKvIndex(now::get);
    KvEventSequencer sequencer = new KvEventSequencer(fresh, new Settings(WINDOW, 64), now::get);
    Random random = new Random(seed);
    List<List<Sequenced>> cut = new ArrayList<>();
    int from = 1;
    for (int b = 0; b < batches && from <= events; b++) {
      int to = b == batches - 1 ? events : Math.min(events, from + random.nextInt(events - from + 1));
      cut.add(chain(from, to));
      from = to + 1;
    }
    List<List<Sequenced>> arrivals = new ArrayList<>(cut);
    for (List<Sequenced> batch : cut) {
      if (random.nextInt(4) == 0) {
        arrivals.add(batch);
      }
    }
    Collections.shuffle(arrivals, random);
    int applied = 0;
    int released = 0;
    for (List<Sequenced> batch : arrivals) {
      Outcome outcome = sequencer.offer(A0, MAX_BLOCKS, batch);
      applied += outcome.applied();
      released += outcome.released();
      now.addAndGet(random.nextInt(3));
      assertThat(sequencer.expire()).isZero();
    }
    // Each event applies once: at once with its batch, or released by a later one.
    assertThat(applied + released).isEqualTo(events);
    assertThat(fresh.overlap(A0, prompt(events), now.get()).device()).isEqualTo(events);
    assertThat(fresh.gapCount()).isZero();
    assertThat(fresh.events().droppedStoreCount()).isZero();
    assertThat(sequencer.counters().held()).isZero();
  }
}
