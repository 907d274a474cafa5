package io.kvrouter.core.admission;

import io.kvrouter.core.replication.LedgerSnapshot;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;
import org.junit.jupiter.api.Test;

class BookingLedgerTest {
  private static final long NOW = 1_700_000_000_000L;

  private static SelectionResult selection(Rank rank) {
    return new SelectionResult(rank, "http://" + rank.workerId(), "eu", 2, 32, 7.5, RankLoad.IDLE, 3, "kv");
  }

  private static Booking open(BookingLedger ledger, String requestId, Rank rank) {
    return ledger.open(requestId, rank, 64, 4, NOW, 0, selection(rank), 99, 0, NOW + 1000, new long[] {1, 2, 3},
        "default");
  }

  @Test
  void aLedgerRebuiltFromItsSnapshotHoldsTheSameBookingsAndFloor() {
    BookingLedger ledger = new BookingLedger(0);
    Booking a = open(ledger, "r1", new Rank("w1", 0));
    open(ledger, "r2", new Rank("w2", 1));
    a.prefillDone = true;
    a.leaseExpiresAtMillis = NOW + 5000;
    ledger.close(open(ledger, "r3", new Rank("w1", 0)));

    LedgerSnapshot snapshot = ledger.snapshot();
    BookingLedger rebuilt = new BookingLedger(snapshot);

    assertThat(rebuilt.snapshot()).usingRecursiveComparison().isEqualTo(snapshot);
    assertThat(snapshot.bookings()).extracting(LedgerSnapshot.Entry::requestId).containsExactly("r1", "r2");
    assertThat(snapshot.highestAttempt()).as("the closed r3's attempt counts too").isGreaterThan(a.attempt + 1);
    assertThat(rebuilt.fenced("r1", a.attempt)).isNotNull();
    assertThat(rebuilt.fenced("r1", a.attempt).heldPrefillTokens()).isZero();
  }

  @Test
  void aRebuiltLedgerIssuesAttemptsAboveTheFloorWhileTheClockStandsStill() {
    BookingLedger ledger = new BookingLedger(0);
    long last = open(ledger, "r1", new Rank("w1", 0)).attempt;
    BookingLedger rebuilt = new BookingLedger(ledger.snapshot());
    assertThat(open(rebuilt, "r2", new Rank("w1", 0)).attempt).isGreaterThan(last);
    assertThat(new BookingLedger(LedgerSnapshot.EMPTY).snapshot().highestAttempt()).isZero();
  }
}
