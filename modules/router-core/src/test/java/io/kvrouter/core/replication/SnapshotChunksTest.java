package io.kvrouter.core.replication;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.Fixtures;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Chunking by estimated size. The estimate's relation to the real Jackson CBOR size is checked in router-cluster
 * (router-core has no Jackson); here: every chunk stays under the budget, the estimate grows with what a chunk holds,
 * and chunks put back together give the copy that was cut.
 */
class SnapshotChunksTest {
  private static final ViewState VIEW = new ViewState("m", 3, 9,
      List.of(Fixtures.worker("a", 2), Fixtures.worker("b", 1)), "kv", Map.of("seed", "", "temperature", "0.0"));
  private static final List<RankRecord> LOADS = List.of(
      new RankRecord("a", 0, new RankLoad(4, 1, 10, 2), new ReportedLoad(1, 2, 3, 4)),
      new RankRecord("a", 1, RankLoad.IDLE, null),
      new RankRecord("b", 0, new RankLoad(5, 2, 20, 4), null));

  private static LedgerSnapshot.Entry booking(String requestId, int hashes) {
    long[] sequence = new long[hashes];
    for (int i = 0; i < hashes; i++) {
      sequence[i] = Long.MIN_VALUE + i * 7919L;
    }
    Rank rank = new Rank("a", 1);
    SelectionResult selection = new SelectionResult(rank, "http://a", "local", 3, 48, 1.5, new RankLoad(9, 1, 2, 3),
        9, "kv");
    return new LedgerSnapshot.Entry(requestId, 1L << 40, rank, 100, 7, 1_700_000_000_000L, 12, selection, sequence,
        -5, false, 1_700_000_300_000L);
  }

  @Test
  void manyBookingsWithLongHashListsAreCutIntoChunksEachUnderTheBudget() {
    Random random = new Random(1);
    List<LedgerSnapshot.Entry> bookings = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      bookings.add(booking("request-" + i, random.nextInt(2_000)));
    }
    int budget = 64 * 1024;
    List<SnapshotChunk> chunks = SnapshotChunks.cut("m", 3, 17, 5, VIEW, LOADS, bookings, 1L << 41, budget);
    assertThat(chunks.size()).isGreaterThan(10);
    for (SnapshotChunk chunk : chunks) {
      assertThat(SnapshotChunks.estimatedBytes(chunk)).as("chunk %d", chunk.index()).isLessThanOrEqualTo(budget);
      assertThat(chunk.count()).isEqualTo(chunks.size());
      assertThat(chunk.view()).isEqualTo(chunk.index() == 0 ? VIEW : null);
      assertThat(chunk.loads()).isEqualTo(chunk.index() == 0 ? LOADS : List.of());
    }
    List<SnapshotChunk> shuffled = new ArrayList<>(chunks);
    Collections.shuffle(shuffled, random);
    RecoveredState copy = RecoveredState.of(shuffled);
    assertThat(copy.view()).isEqualTo(VIEW);
    assertThat(copy.loads()).isEqualTo(LOADS);
    assertThat(copy.seq()).isEqualTo(17);
    assertThat(copy.ledger().highestAttempt()).isEqualTo(1L << 41);
    assertThat(Copies.bookings(copy.ledger().bookings())).isEqualTo(Copies.bookings(bookings));
  }

  @Test
  void queuedBooksFollowTheBookingsUnderTheBudgetAndComeBackInOrder() {
    List<LedgerSnapshot.Entry> bookings = List.of(booking("b0", 10), booking("b1", 10));
    List<QueuedBook> queued = new ArrayList<>();
    for (int i = 0; i < 3_000; i++) {
      queued.add(new QueuedBook("queued-" + i, -i, "pekko://kvrouter@127.0.0.1:25520/temp/$" + i, "gold",
          1_700_000_000_000L + i));
    }
    int budget = 16 * 1024;
    List<SnapshotChunk> chunks = SnapshotChunks.cut("m", 3, 17, 5, VIEW, LOADS, bookings, 1, queued, budget);
    assertThat(chunks.size()).isGreaterThan(10);
    for (SnapshotChunk chunk : chunks) {
      assertThat(SnapshotChunks.estimatedBytes(chunk)).isLessThanOrEqualTo(budget);
    }
    List<SnapshotChunk> shuffled = new ArrayList<>(chunks);
    Collections.shuffle(shuffled, new Random(3));
    RecoveredState copy = RecoveredState.of(shuffled);
    assertThat(copy.queued()).isEqualTo(queued);
    assertThat(Copies.bookings(copy.ledger().bookings())).isEqualTo(Copies.bookings(bookings));
    SnapshotChunk one = chunks.get(chunks.size() - 1);
    List<QueuedBook> plusOne = new ArrayList<>(one.queued());
    plusOne.add(queued.get(0));
    SnapshotChunk oneMore = new SnapshotChunk(one.model(), one.epoch(), one.seq(), one.index(), one.count(),
        one.sentAtMillis(), null, List.of(), List.of(), one.highestAttempt(), plusOne);
    assertThat(SnapshotChunks.estimatedBytes(oneMore)).isGreaterThan(SnapshotChunks.estimatedBytes(one));
  }

  @Test
  void anEmptyModelIsOneChunkCarryingTheView() {
    ViewState empty = new ViewState("m", 3, 1, List.of(), "kv", Map.of());
    List<SnapshotChunk> chunks = SnapshotChunks.cut("m", 3, 0, 5, empty, List.of(), List.of(), 0, 1024);
    assertThat(chunks).singleElement().satisfies(chunk -> {
      assertThat(chunk.index()).isZero();
      assertThat(chunk.count()).isEqualTo(1);
      assertThat(chunk.view()).isEqualTo(empty);
    });
  }

  @Test
  void aBookingWhoseHashesAloneExceedTheBudgetKeepsTheLeadingHashesThatFit() {
    int budget = 4096;
    LedgerSnapshot.Entry huge = booking("huge", 5_000);
    List<SnapshotChunk> chunks = SnapshotChunks.cut("m", 3, 1, 5, VIEW, LOADS,
        List.of(booking("small", 3), huge, booking("after", 3)), 0, budget);
    List<LedgerSnapshot.Entry> all = RecoveredState.of(chunks).ledger().bookings();
    assertThat(all).extracting(LedgerSnapshot.Entry::requestId).containsExactly("small", "huge", "after");
    long[] kept = all.get(1).sequenceHashes();
    assertThat(kept.length).isBetween(1, 5_000 - 1);
    assertThat(kept).isEqualTo(java.util.Arrays.copyOf(huge.sequenceHashes(), kept.length));
    for (SnapshotChunk chunk : chunks) {
      assertThat(SnapshotChunks.estimatedBytes(chunk)).isLessThanOrEqualTo(budget);
    }
    // one more hash would not have fitted in a chunk of its own
    SnapshotChunk alone = chunks.stream().filter(c -> c.bookings().contains(all.get(1))).findFirst().orElseThrow();
    assertThat(alone.bookings()).hasSize(1);
    LedgerSnapshot.Entry oneMore = withHashes(all.get(1), java.util.Arrays.copyOf(huge.sequenceHashes(),
        kept.length + 1));
    assertThat(SnapshotChunks.estimatedBytes(new SnapshotChunk("m", 3, 1, alone.index(), alone.count(), 5, null,
        List.of(), List.of(oneMore), 0, List.of()))).isGreaterThan(budget);
  }

  @Test
  void theEstimateGrowsWithEveryHashStringAndRecord() {
    LedgerSnapshot.Entry base = booking("r", 10);
    assertThat(SnapshotChunks.entryBytes(booking("r", 11))).isGreaterThan(SnapshotChunks.entryBytes(base));
    assertThat(SnapshotChunks.entryBytes(booking("rr", 10))).isGreaterThan(SnapshotChunks.entryBytes(base));
    assertThat(SnapshotChunks.entryBytes(booking("é", 10))).as("UTF-8: two bytes")
        .isGreaterThan(SnapshotChunks.entryBytes(booking("e", 10)));
    assertThat(SnapshotChunks.entryBytes(base)).as("at least 8 bytes per hash")
        .isGreaterThanOrEqualTo(8 * 10);
    SnapshotChunk one = SnapshotChunks.cut("m", 3, 1, 5, VIEW, LOADS, List.of(base), 0, 1 << 20).get(0);
    SnapshotChunk two = SnapshotChunks.cut("m", 3, 1, 5, VIEW, LOADS, List.of(base, booking("s", 10)), 0, 1 << 20)
        .get(0);
    assertThat(SnapshotChunks.estimatedBytes(two)).isGreaterThan(SnapshotChunks.estimatedBytes(one));
    ViewState wider = new ViewState("m", 3, 9, List.of(Fixtures.worker("a", 2), Fixtures.worker("b", 1),
        Fixtures.worker("c", 1)), "kv", VIEW.parameters());
    assertThat(SnapshotChunks.viewBytes(wider)).isGreaterThan(SnapshotChunks.viewBytes(VIEW));
    assertThat(SnapshotChunks.rankRecordBytes(LOADS.get(0))).isGreaterThan(SnapshotChunks.rankRecordBytes(LOADS.get(1)));
  }

  @Test
  void theEstimateCountsAPairsDecodeHalfAndAWorkersLoraAdapters() {
    LedgerSnapshot.Entry single = booking("r", 10);
    SelectionResult decode = new SelectionResult(new Rank("d", 0), "http://d", "local", 0, 0, 7.0,
        new RankLoad(3, 1, 0, 7), 9, "kv");
    LedgerSnapshot.Entry pair = new LedgerSnapshot.Entry(single.requestId(), single.attempt(), single.rank(),
        single.prefillTokens(), single.decodeBlocks(), single.bookedAtMillis(), single.queuedMicros(),
        single.selection().withDecode(decode), single.sequenceHashes(), single.nonces(), single.retry(),
        single.prefillDone(), single.leaseExpiresAtMillis(), single.policyClass());
    assertThat(SnapshotChunks.entryBytes(pair)).as("the decode half: a rank, an endpoint, a load")
        .isGreaterThan(SnapshotChunks.entryBytes(single) + "http://d".length() + 3 * 8);
    ViewState withAdapters = new ViewState("m", 3, 9, List.of(Fixtures.worker("a", 2)
        .withLoraAdapters(java.util.Set.of("an-adapter-name")), Fixtures.worker("b", 1)), "kv", VIEW.parameters());
    assertThat(SnapshotChunks.viewBytes(withAdapters)).isGreaterThanOrEqualTo(SnapshotChunks.viewBytes(VIEW)
        + "an-adapter-name".length());
  }

  @Test
  void chunksOfDifferentCopiesOrAMissingChunkDoNotAssemble() {
    List<LedgerSnapshot.Entry> bookings = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      bookings.add(booking("r" + i, 100));
    }
    List<SnapshotChunk> first = SnapshotChunks.cut("m", 3, 1, 5, VIEW, LOADS, bookings, 0, 4096);
    List<SnapshotChunk> second = SnapshotChunks.cut("m", 3, 2, 5, VIEW, LOADS, bookings, 0, 4096);
    assertThatThrownBy(() -> RecoveredState.of(first.subList(0, first.size() - 1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("missing");
    List<SnapshotChunk> mixed = new ArrayList<>(first.subList(0, first.size() - 1));
    mixed.add(second.get(second.size() - 1));
    assertThatThrownBy(() -> RecoveredState.of(mixed)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("different copies");
  }

  private static LedgerSnapshot.Entry withHashes(LedgerSnapshot.Entry e, long[] hashes) {
    return e.withSequenceHashes(hashes);
  }
}
