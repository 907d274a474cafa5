package io.kvrouter.core.indexer;

import static io.kvrouter.core.indexer.StorageTier.DEVICE;
import static io.kvrouter.core.indexer.StorageTier.DISK;
import static io.kvrouter.core.indexer.StorageTier.HOST;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.testkit.IndexWrites;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Named store/remove/clear scenarios for the event-fed index. */
class KvIndexTest {
  static final Rank A0 = new Rank("a", 0);
  static final Rank A1 = new Rank("a", 1);
  static final Rank B0 = new Rank("b", 0);

  /** Tokens hashes: the router's sequence hashes (any distinct longs do). */
  static long t(int i) {
    return 0x1000_0000_0000L + i * 7919L;
  }

  static long[] ts(int... ids) {
    return Arrays.stream(ids).mapToLong(KvIndexTest::t).toArray();
  }

  /** Engine block hashes, salted per rank as some engines do: only the tokens hashes are comparable. */
  static long b(Rank rank, int i) {
    return (rank.workerId().hashCode() * 31L + rank.dpRank()) * 1_000_003L + i;
  }

  static long[] bs(Rank rank, int... ids) {
    return Arrays.stream(ids).mapToLong(i -> b(rank, i)).toArray();
  }

  /** Stores blocks {@code ids} (tokens hashes t(id), block hashes b(rank, id)) under {@code parent} (0 = root). */
  static boolean store(KvIndex index, Rank rank, StorageTier tier, int parent, int... ids) {
    return IndexWrites.to(index).stored(rank, tier, parent == 0 ? null : b(rank, parent), bs(rank, ids), ts(ids));
  }

  static TieredOverlap ov(int device, int host, int disk) {
    return new TieredOverlap(device, host, disk);
  }

  @Test
  void chainFromRootMatchesItsPrefix() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2, 3);
    assertThat(index.overlap(A0, ts(1, 2, 3, 4, 5))).isEqualTo(ov(3, 0, 0));
    assertThat(index.overlap(A0, ts(1, 2))).isEqualTo(ov(2, 0, 0));
    assertThat(index.overlap(A0, ts(1, 9, 3))).isEqualTo(ov(1, 0, 0));
    assertThat(index.overlap(A0, ts(2, 3))).isEqualTo(ov(0, 0, 0));
    assertThat(index.overlap(A0, new long[0])).isEqualTo(ov(0, 0, 0));
    assertThat(index.overlap(B0, ts(1, 2, 3))).isEqualTo(ov(0, 0, 0));
    assertThat(index.blockCount()).isEqualTo(3);
    assertThat(index.entryCount()).isEqualTo(3);
  }

  @Test
  void parentChainingExtendsAStoredChain() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2);
    assertThat(store(index, A0, DEVICE, 2, 3)).isTrue();
    assertThat(store(index, A0, DEVICE, 3, 4, 5)).isTrue();
    assertThat(index.overlap(A0, ts(1, 2, 3, 4, 5, 6))).isEqualTo(ov(5, 0, 0));
  }

  @Test
  void aRankHoldsAtMostItsBoundAndRemovedMakesRoom() {
    KvIndex index = new KvIndex();
    KvEvent.Stored five = new KvEvent.Stored(DEVICE, null, bs(A0, 1, 2, 3, 4, 5), ts(1, 2, 3, 4, 5));
    assertThat(index.apply(A0, 1, five, 3)).as("applied, though cut").isTrue();
    assertThat(index.overlap(A0, ts(1, 2, 3, 4, 5))).isEqualTo(ov(3, 0, 0));
    assertThat(index.overCapacityBlockCount()).isEqualTo(2);
    // a block it already holds is no new block: another tier on it is kept
    assertThat(index.apply(A0, 2, new KvEvent.Stored(HOST, null, bs(A0, 1), ts(1)), 3)).isTrue();
    assertThat(index.overlap(A0, ts(1, 2, 3))).isEqualTo(ov(3, 0, 0));
    assertThat(index.apply(A0, 3, new KvEvent.Stored(DEVICE, b(A0, 3), bs(A0, 4), ts(4)), 3)).isTrue();
    assertThat(index.overCapacityBlockCount()).isEqualTo(3);
    // other ranks have bounds of their own
    assertThat(index.apply(B0, 1, new KvEvent.Stored(DEVICE, null, bs(B0, 1, 2, 3), ts(1, 2, 3)), 3)).isTrue();
    assertThat(index.overlap(B0, ts(1, 2, 3))).isEqualTo(ov(3, 0, 0));
    // Removed frees room for the next Stored
    assertThat(index.apply(A0, 4, new KvEvent.Removed(DEVICE, bs(A0, 3)), 3)).isTrue();
    assertThat(index.apply(A0, 5, new KvEvent.Stored(DEVICE, b(A0, 2), bs(A0, 6), ts(6)), 3)).isTrue();
    assertThat(index.overlap(A0, ts(1, 2, 6))).isEqualTo(ov(3, 0, 0));
    assertThat(index.overCapacityBlockCount()).isEqualTo(3);
    assertThat(index.entryCount()).isEqualTo(6);
  }

  @Test
  void oneMillionStoredBlocksOnAThousandBlockRankKeepAThousand() {
    KvIndex index = new KvIndex();
    long eventId = 0;
    for (int chain = 0; chain < 1000; chain++) {
      long[] tokens = new long[1000];
      long[] blocks = new long[1000];
      for (int i = 0; i < 1000; i++) {
        tokens[i] = chain * 1_000_000L + i + 1;
        blocks[i] = tokens[i] * 31;
      }
      index.apply(A0, ++eventId, new KvEvent.Stored(DEVICE, null, blocks, tokens), 1000);
    }
    assertThat(index.entryCount()).isEqualTo(1000);
    assertThat(index.overCapacityBlockCount()).isEqualTo(999_000);
  }

  @Test
  void storedUnderAnUnknownParentIsDroppedAndCounted() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1);
    // B0 never stored block 1: the parent is unknown for B0, even though A0 holds the same tokens.
    assertThat(store(index, B0, DEVICE, 1, 2)).isFalse();
    assertThat(index.droppedStoreCount()).isEqualTo(1);
    assertThat(index.overlap(B0, ts(1, 2))).isEqualTo(ov(0, 0, 0));
    assertThat(index.blockCount()).isEqualTo(1);
  }

  @Test
  void branchingPrefixesScoreEachRankByItsOwnBranch() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2, 3);
    store(index, B0, DEVICE, 0, 1, 2);
    store(index, B0, DEVICE, 2, 4, 5);
    assertThat(index.overlaps(ts(1, 2, 3))).containsExactlyInAnyOrderEntriesOf(Map.of(A0, ov(3, 0, 0), B0, ov(2, 0, 0)));
    assertThat(index.overlaps(ts(1, 2, 4, 5))).containsExactlyInAnyOrderEntriesOf(Map.of(A0, ov(2, 0, 0), B0, ov(4, 0, 0)));
    assertThat(index.blockCount()).isEqualTo(5);
    assertThat(index.entryCount()).isEqualTo(7);
  }

  @Test
  void saltedEngineHashesStillMatchByTokensHash() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2);
    store(index, A1, DEVICE, 0, 1, 2);
    assertThat(b(A0, 1)).isNotEqualTo(b(A1, 1));
    assertThat(index.blockCount()).isEqualTo(2);
    assertThat(index.overlaps(ts(1, 2))).containsOnlyKeys(A0, A1);
  }

  @Test
  void removedMiddleBlockCascadesThatRanksChildrenOnly() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2, 3, 4);
    store(index, B0, DEVICE, 0, 1, 2, 3);
    IndexWrites.to(index).removed(A0, DEVICE, bs(A0, 2));
    assertThat(index.overlap(A0, ts(1, 2, 3, 4))).isEqualTo(ov(1, 0, 0));
    assertThat(index.overlap(B0, ts(1, 2, 3, 4))).isEqualTo(ov(3, 0, 0));
    // Block 4 was only A0's, so its node went with the cascade.
    assertThat(index.blockCount()).isEqualTo(3);
    assertThat(index.entryCount()).isEqualTo(1 + 3);
    // The cascaded blocks are gone from A0's lookup too: storing under them is now an unknown parent.
    assertThat(store(index, A0, DEVICE, 3, 5)).isFalse();
    // A later Removed of an already cascaded block is a no-op.
    IndexWrites.to(index).removed(A0, DEVICE, bs(A0, 4));
    assertThat(index.entryCount()).isEqualTo(4);
  }

  @Test
  void removingTheLastHolderPrunesTheNodes() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2, 3);
    store(index, A0, DEVICE, 1, 7, 8);
    IndexWrites.to(index).removed(A0, DEVICE, bs(A0, 1));
    assertThat(index.blockCount()).isZero();
    assertThat(index.entryCount()).isZero();
    store(index, A0, DEVICE, 0, 1, 2);
    assertThat(index.overlap(A0, ts(1, 2, 3))).isEqualTo(ov(2, 0, 0));
  }

  @Test
  void removingALeafKeepsTheRest() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2, 3);
    IndexWrites.to(index).removed(A0, DEVICE, bs(A0, 3));
    assertThat(index.overlap(A0, ts(1, 2, 3))).isEqualTo(ov(2, 0, 0));
    assertThat(index.blockCount()).isEqualTo(2);
  }

  @Test
  void lowerTiersCountBlocksBeyondTheDevicePrefix() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2);
    store(index, A0, HOST, 2, 3, 4);
    store(index, A0, DISK, 4, 5);
    long[] query = ts(1, 2, 3, 4, 5, 6);
    assertThat(index.overlap(A0, query)).isEqualTo(ov(2, 2, 1));
    // Offloading block 2 to host as well, then evicting it from the device, moves it from the device run to host.
    store(index, A0, HOST, 1, 2);
    IndexWrites.to(index).removed(A0, DEVICE, bs(A0, 2));
    assertThat(index.overlap(A0, query)).isEqualTo(ov(1, 3, 1));
    // Evicting it from host too leaves no path past block 1: the rank's descendants go.
    IndexWrites.to(index).removed(A0, HOST, bs(A0, 2));
    assertThat(index.overlap(A0, query)).isEqualTo(ov(1, 0, 0));
    assertThat(index.blockCount()).isEqualTo(1);
  }

  @Test
  void fasterTierBlocksCountInASlowerRun() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1);
    store(index, A0, HOST, 1, 2);
    store(index, A0, DEVICE, 2, 3);
    store(index, A0, DISK, 3, 4);
    store(index, A0, HOST, 4, 5);
    // device run: 1; host run (host or device): 2, 3; disk run (any tier): 4, 5.
    assertThat(index.overlap(A0, ts(1, 2, 3, 4, 5))).isEqualTo(ov(1, 2, 2));
    // No device prefix at all: everything is "beyond the device prefix".
    KvIndex other = new KvIndex();
    store(other, B0, DISK, 0, 1, 2);
    assertThat(other.overlap(B0, ts(1, 2))).isEqualTo(ov(0, 0, 2));
  }

  @Test
  void removedOfAnotherTierKeepsTheBlock() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2);
    IndexWrites.to(index).removed(A0, HOST, bs(A0, 1));
    assertThat(index.overlap(A0, ts(1, 2))).isEqualTo(ov(2, 0, 0));
  }

  @Test
  void clearedDropsOneRankOnly() {
    KvIndex index = new KvIndex();
    store(index, A0, DEVICE, 0, 1, 2, 3);
    store(index, A0, HOST, 3, 4);
    store(index, A1, DEVICE, 0, 1, 2);
    IndexWrites.to(index).cleared(A0);
    assertThat(index.overlaps(ts(1, 2, 3, 4))).containsExactlyInAnyOrderEntriesOf(Map.of(A1, ov(2, 0, 0)));
    assertThat(index.blockCount()).isEqualTo(2);
    assertThat(index.entryCount()).isEqualTo(2);
    assertThat(store(index, A0, DEVICE, 1, 9)).isFalse();
  }

  @Test
  void removeWorkerDropsAllItsRanksAndItsEventHistory() {
    KvIndex index = new KvIndex();
    index.apply(A0, 5, stored(A0, DEVICE, 0, 1, 2));
    index.apply(A1, 9, stored(A1, DEVICE, 0, 1));
    index.apply(B0, 1, stored(B0, DEVICE, 0, 1, 2, 3));
    index.removeWorker("a");
    assertThat(index.overlaps(ts(1, 2, 3))).containsExactlyInAnyOrderEntriesOf(Map.of(B0, ov(3, 0, 0)));
    assertThat(index.rankCount()).isEqualTo(1);
    assertThat(index.entryCount()).isEqualTo(3);
    // The worker comes back and starts a fresh id sequence: id 1 is not a duplicate of the old 5.
    assertThat(index.apply(A0, 1, stored(A0, DEVICE, 0, 1))).isTrue();
    assertThat(index.gapCount()).isZero();
    assertThat(index.overlap(A0, ts(1, 2))).isEqualTo(ov(1, 0, 0));
  }

  static KvEvent stored(Rank rank, StorageTier tier, int parent, int... ids) {
    return new KvEvent.Stored(tier, parent == 0 ? null : b(rank, parent), bs(rank, ids), ts(ids));
  }

  @Test
  void eventIdsIgnoreDuplicatesAndClearOnAGap() {
    KvIndex index = new KvIndex();
    assertThat(index.apply(A0, 100, stored(A0, DEVICE, 0, 1, 2))).isTrue();
    assertThat(index.apply(A0, 101, stored(A0, DEVICE, 2, 3))).isTrue();
    // Duplicate and old ids are ignored (a redelivered batch must not apply twice).
    assertThat(index.apply(A0, 101, new KvEvent.Removed(DEVICE, bs(A0, 1)))).isFalse();
    assertThat(index.apply(A0, 50, KvEvent.Cleared.INSTANCE)).isFalse();
    assertThat(index.overlap(A0, ts(1, 2, 3))).isEqualTo(ov(3, 0, 0));
    // Other ranks have their own sequence.
    assertThat(index.apply(A1, 7, stored(A1, DEVICE, 0, 1))).isTrue();
    assertThat(index.gapCount()).isZero();
    // 103 after 101: event 102 was lost, so A0's view is cleared before 103 applies.
    assertThat(index.apply(A0, 103, stored(A0, DEVICE, 0, 5))).isTrue();
    assertThat(index.gapCount()).isEqualTo(1);
    assertThat(index.overlap(A0, ts(1, 2, 3))).isEqualTo(ov(0, 0, 0));
    assertThat(index.overlap(A0, ts(5))).isEqualTo(ov(1, 0, 0));
    assertThat(index.overlap(A1, ts(1))).isEqualTo(ov(1, 0, 0));
    // A Stored chained on a block lost in the gap is dropped.
    assertThat(index.apply(A0, 104, stored(A0, DEVICE, 2, 3))).isTrue();
    assertThat(index.droppedStoreCount()).isEqualTo(1);
    assertThat(index.apply(A0, 105, KvEvent.Cleared.INSTANCE)).isTrue();
    assertThat(index.overlap(A0, ts(5))).isEqualTo(ov(0, 0, 0));
    assertThat(index.gapCount()).isEqualTo(1);
  }

  @Test
  void restoringABlockUnderANewEngineIdReplacesTheOldId() {
    KvIndex index = new KvIndex();
    IndexWrites.to(index).stored(A0, DEVICE, null, new long[] {11, 12}, ts(1, 2));
    // Same tokens, new engine id for block 2 (e.g. re-stored after a re-hash): the old id no longer resolves.
    IndexWrites.to(index).stored(A0, DEVICE, 11L, new long[] {22}, ts(2));
    IndexWrites.to(index).removed(A0, DEVICE, new long[] {12});
    assertThat(index.overlap(A0, ts(1, 2))).isEqualTo(ov(2, 0, 0));
    IndexWrites.to(index).removed(A0, DEVICE, new long[] {22});
    assertThat(index.overlap(A0, ts(1, 2))).isEqualTo(ov(1, 0, 0));
    // An engine id reused for other content moves: the old placement (and its chain) is gone.
    IndexWrites.to(index).stored(A0, DEVICE, null, new long[] {11, 30}, ts(1, 3));
    IndexWrites.to(index).stored(A0, DEVICE, null, new long[] {30}, ts(4));
    assertThat(index.overlap(A0, ts(1, 3))).isEqualTo(ov(1, 0, 0));
    assertThat(index.overlap(A0, ts(4))).isEqualTo(ov(1, 0, 0));
  }

  @Test
  void manyChildrenUnderOneNodeStayFindableThroughGrowthAndShrinking() {
    KvIndex index = new KvIndex();
    int n = 500;
    for (int i = 1; i <= n; i++) {
      store(index, A0, DEVICE, 0, i);
    }
    for (int i = 1; i <= n; i++) {
      assertThat(index.overlap(A0, ts(i))).isEqualTo(ov(1, 0, 0));
    }
    for (int i = 1; i <= n; i += 2) {
      IndexWrites.to(index).removed(A0, DEVICE, bs(A0, i));
    }
    for (int i = 1; i <= n; i++) {
      assertThat(index.overlap(A0, ts(i)).device()).as("block %d", i).isEqualTo(i % 2 == 0 ? 1 : 0);
    }
    for (int i = 2; i <= n - 2; i += 2) {
      IndexWrites.to(index).removed(A0, DEVICE, bs(A0, i));
    }
    assertThat(index.overlap(A0, ts(n))).isEqualTo(ov(1, 0, 0));
    assertThat(index.blockCount()).isEqualTo(1);
  }

  @Test
  void selectionPathFillsEveryCandidate() {
    KvIndex index = new KvIndex();
    ViewFixture fixture = new ViewFixture(index, ViewFixture.workers("a", 2, "b", 1, "c", 1));
    store(index, A0, DEVICE, 0, 1, 2, 3);
    store(index, A1, DEVICE, 0, 1);
    store(index, A1, HOST, 1, 2, 3);
    store(index, B0, DISK, 0, 1);
    Map<Rank, TieredOverlap> got = fixture.overlaps(ts(1, 2, 3, 4));
    assertThat(got).containsExactlyInAnyOrderEntriesOf(Map.of(
        A0, ov(3, 0, 0), A1, ov(1, 2, 0), B0, ov(0, 0, 1), new Rank("c", 0), ov(0, 0, 0)));
    // A scratch reused across calls must not leak a previous request's overlaps.
    assertThat(fixture.overlaps(ts(9))).allSatisfy((rank, overlap) -> assertThat(overlap.total()).isZero());
  }
}
