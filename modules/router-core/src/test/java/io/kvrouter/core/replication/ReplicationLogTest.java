package io.kvrouter.core.replication;

import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.replication.BookingChange;
import io.kvrouter.core.replication.ClosedBooking;
import io.kvrouter.core.replication.LedgerSnapshot;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.ReplicationLog;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.model.Rank;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Netting of booking changes within one delta, sequence numbers, and the null delta. */
class ReplicationLogTest {
  private final ReplicationLog log = new ReplicationLog("m", 7, true);

  private static LedgerSnapshot.Entry entry(String requestId, long attempt) {
    return new LedgerSnapshot.Entry(requestId, attempt, new Rank("a", 0), 10, 2, 1, 0, null, new long[] {1, 2}, 0,
        false, 500);
  }

  /** Everything pending as one delta (no budget), or null when nothing is. */
  private ReplicaDelta drain() {
    List<ReplicaDelta> deltas = log.drain(1, () -> new ViewState("m", 7, 1, List.of(), "kv", java.util.Map.of()),
        rank -> null, 99, Integer.MAX_VALUE);
    assertThat(deltas).hasSizeLessThanOrEqualTo(1);
    return deltas.isEmpty() ? null : deltas.get(0);
  }

  @Test
  void nothingChangedDrainsNullAndSeqStartsAtOne() {
    assertThat(drain()).isNull();
    assertThat(log.seq()).isZero();
    log.rankChanged(new Rank("a", 0));
    ReplicaDelta first = drain();
    assertThat(first.seq()).isEqualTo(1);
    assertThat(first.epoch()).isEqualTo(7);
    assertThat(first.view()).isNull();
    assertThat(first.highestAttempt()).isEqualTo(99);
    assertThat(drain()).isNull();
    log.viewChanged();
    assertThat(drain().seq()).isEqualTo(2);
  }

  @Test
  void openedThenClosedInOneIntervalIsInNeitherList() {
    log.opened(entry("r1", 5));
    log.changed(new BookingChange("r1", 5, true, 900, List.of(1L), 0));
    log.closed("r1", 5);
    assertThat(log.hasChanges()).isFalse();
    assertThat(drain()).isNull();
  }

  @Test
  void closedThenReopenedUnderANewAttemptIsClosedOldAndOpenedNew() {
    log.opened(entry("r1", 5));
    drain();
    log.changed(new BookingChange("r1", 5, true, 900, List.of(1L), 0));
    log.closed("r1", 5);
    log.opened(entry("r1", 6));
    ReplicaDelta delta = drain();
    assertThat(delta.closed()).containsExactly(new ClosedBooking("r1", 5));
    assertThat(delta.changed()).as("the change died with its booking").isEmpty();
    assertThat(delta.opened()).extracting(LedgerSnapshot.Entry::attempt).containsExactly(6L);
  }

  @Test
  void aChangeToABookingOpenedInTheSameIntervalIsFoldedIntoIt() {
    log.opened(entry("r1", 5));
    log.changed(new BookingChange("r1", 5, true, 900, List.of(1L), 0));
    ReplicaDelta delta = drain();
    assertThat(delta.changed()).isEmpty();
    assertThat(delta.opened()).singleElement().satisfies(e -> {
      assertThat(e.prefillDone()).isTrue();
      assertThat(e.leaseExpiresAtMillis()).isEqualTo(900);
    });
    log.changed(new BookingChange("r1", 5, true, 950, List.of(1L), 0));
    log.changed(new BookingChange("r1", 5, true, 1000, List.of(1L), 0));
    assertThat(drain().changed()).containsExactly(new BookingChange("r1", 5, true, 1000, List.of(1L), 0));
  }

  @Test
  void switchedOffItRecordsNothing() {
    ReplicationLog log = new ReplicationLog("m", 1, false);
    log.opened(entry("r2", 6));
    log.viewChanged();
    log.rankChanged(new Rank("a", 0));
    log.changed(new BookingChange("r2", 6, true, 1, List.of(1L), 0));
    log.closed("r2", 6);
    assertThat(log.hasChanges()).isFalse();
    assertThat(log.drain(0, () -> null, rank -> null, 0, Integer.MAX_VALUE)).isEmpty();
  }

  @Test
  void aDiscardForgetsThePendingChangesAndAdvancesTheSeqOnlyWhenThereWereAny() {
    log.discard();
    assertThat(log.seq()).as("nothing pending: nothing to forget").isZero();
    log.opened(entry("r1", 5));
    log.rankChanged(new Rank("a", 0));
    log.discard();
    assertThat(log.hasChanges()).isFalse();
    assertThat(log.seq()).isEqualTo(1);
    log.opened(entry("r2", 6));
    ReplicaDelta next = drain();
    assertThat(next.seq()).isEqualTo(2);
    assertThat(next.opened()).extracting(LedgerSnapshot.Entry::requestId).containsExactly("r2");
  }
}
