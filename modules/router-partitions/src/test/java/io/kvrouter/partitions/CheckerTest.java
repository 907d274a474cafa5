package io.kvrouter.partitions;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CheckerTest {
  private static final long LEASE = 600_000;
  private final List<Op> ops = new ArrayList<>();

  private Op book(String rid, int node, double invoke, double complete, long attempt, String worker) {
    return add(new Op(ops.size(), "c", node, Op.F.BOOK, rid, 0, "", false, invoke, complete, Op.Type.OK, attempt,
        worker, "east", false, false, ""));
  }

  private Op bookInfo(String rid, double invoke, double complete) {
    return add(new Op(ops.size(), "c", 1, Op.F.BOOK, rid, 0, "", false, invoke, complete, Op.Type.INFO, 0, "", "",
        false, false, "DEADLINE_EXCEEDED"));
  }

  private Op release(String rid, long attempt, double invoke, double complete, Op.Type type, boolean applied) {
    return add(new Op(ops.size(), "c", 2, Op.F.RELEASE, rid, attempt, "east", false, invoke, complete, type, 0, "",
        "", false, applied, type == Op.Type.OK ? "" : "UNAVAILABLE"));
  }

  private Op prefill(String rid, long attempt, double invoke, double complete, boolean applied) {
    return add(new Op(ops.size(), "c", 1, Op.F.PREFILL, rid, attempt, "east", false, invoke, complete, Op.Type.OK,
        0, "", "", false, applied, ""));
  }

  private Op add(Op op) {
    ops.add(op);
    return op;
  }

  private static LiveSet live(String source, double at, BookingKey... keys) {
    Map<BookingKey, String> m = new java.util.LinkedHashMap<>();
    for (BookingKey k : keys) {
      m.put(k, "w1");
    }
    return new LiveSet(source, 1, "east", at, at + 1, m);
  }

  private Checker.Verdict check(int capacity, List<LiveSet> audits, List<LiveSet> finals) {
    return Checker.check(new Checker.Input(ops, Map.of("east/w1", capacity, "east/w2", capacity), LEASE, audits,
        finals));
  }

  private static BookingKey key(String rid, long attempt) {
    return new BookingKey("east", rid, attempt);
  }

  @Test
  void aHistoryOneOwnerCouldHaveProducedIsValid() {
    book("r1", 1, 0, 10, 100, "w1");
    prefill("r1", 100, 11, 12, true);
    book("r2", 2, 5, 15, 101, "w1");
    release("r1", 100, 20, 25, Op.Type.OK, true);
    book("r3", 1, 22, 30, 102, "w1"); // r1's Release was invoked before r3 was acknowledged: two live at most
    release("r2", 101, 40, 45, Op.Type.OK, true);
    release("r3", 102, 40, 45, Op.Type.OK, true);
    Checker.Verdict v = check(2, List.of(live("audit", 35, key("r2", 101), key("r3", 102))),
        List.of(live("final", 50)));
    assertThat(v.violations()).isEmpty();
    assertThat(v.valid()).isTrue();
  }

  @Test
  void aReleaseAnsweredNotAppliedWithoutAnEarlierReleaseIsALostBooking() {
    book("r1", 1, 0, 10, 100, "w1");
    release("r1", 100, 50, 55, Op.Type.OK, false);
    Checker.Verdict v = check(4, List.of(), List.of());
    assertThat(v.counts()).containsEntry("lost", 1);
    assertThat(v.violations().get(0).history()).extracting(Op::f).containsExactly(Op.F.BOOK, Op.F.RELEASE);
  }

  @Test
  void aReleaseOfUnknownOutcomeBeforeExcusesANotAppliedOne() {
    book("r1", 1, 0, 10, 100, "w1");
    release("r1", 100, 50, 55, Op.Type.INFO, false); // may have applied
    release("r1", 100, 60, 65, Op.Type.OK, false);
    prefill("r1", 100, 11, 12, true);
    assertThat(check(4, List.of(), List.of()).counts()).doesNotContainKey("lost");
  }

  @Test
  void aRefusedReleaseBeforeDoesNotExcuseANotAppliedOne() {
    book("r1", 1, 0, 10, 100, "w1");
    release("r1", 100, 50, 50, Op.Type.FAIL, false); // connection refused: never reached a router
    release("r1", 100, 51, 52, Op.Type.OK, false);
    assertThat(check(4, List.of(), List.of()).counts()).containsEntry("lost", 1);
  }

  @Test
  void aMarkPrefillDoneNotAppliedWithNoReleaseBeforeIsALostBooking() {
    book("r1", 1, 0, 10, 100, "w1");
    prefill("r1", 100, 20, 21, false);
    assertThat(check(4, List.of(), List.of()).counts()).containsEntry("lost", 1);
  }

  @Test
  void moreCertainlyLiveBookingsOnAWorkerThanItsCapacityIsOverAdmission() {
    book("a", 1, 0, 10, 100, "w1");
    book("b", 1, 0, 11, 101, "w1");
    book("c", 2, 5, 20, 200, "w1"); // acknowledged while a and b are held: three on a worker of capacity 2
    book("d", 2, 5, 20, 201, "w2");
    release("a", 100, 30, 31, Op.Type.OK, true);
    Checker.Verdict v = check(2, List.of(), List.of());
    assertThat(v.counts()).containsEntry("over-admission", 1);
    assertThat(v.violations().get(0).description()).contains("east/w1 held 3");
  }

  @Test
  void aBookingWhoseReleaseWasInvokedIsNoLongerCountedAgainstTheWorker() {
    book("a", 1, 0, 10, 100, "w1");
    release("a", 100, 15, 40, Op.Type.INFO, false); // invoked at 15: it may have taken effect at once
    book("b", 1, 0, 11, 101, "w1");
    book("c", 2, 16, 20, 200, "w1");
    assertThat(check(2, List.of(), List.of()).counts()).doesNotContainKey("over-admission");
  }

  @Test
  void aBookOfUnknownOutcomeIsNotCountedButDoesNotMakeTheHistoryInvalid() {
    bookInfo("x", 0, 100);
    book("a", 1, 0, 10, 100, "w1");
    book("b", 1, 0, 11, 101, "w1");
    assertThat(check(2, List.of(), List.of()).valid()).isTrue();
  }

  @Test
  void twoRequestIdsWithOneAttemptAreADuplicateAttempt() {
    book("a", 1, 0, 10, 100, "w1");
    book("b", 3, 0, 10, 100, "w2");
    assertThat(check(4, List.of(), List.of()).counts()).containsEntry("duplicate-attempt", 1);
  }

  @Test
  void aLiveRequestIdBookedAnewMeansItsBookingWasForgotten() {
    book("a", 1, 0, 10, 100, "w1");
    book("a", 2, 20, 25, 300, "w2"); // not a replay, while a@100 was never released
    assertThat(check(4, List.of(), List.of()).counts()).containsEntry("rebooked", 1);
  }

  @Test
  void theAuditMustHoldEveryAcknowledgedUnreleasedBookingAndNoReleasedOne() {
    book("a", 1, 0, 10, 100, "w1");
    book("b", 1, 0, 10, 101, "w1");
    release("b", 101, 20, 21, Op.Type.OK, true);
    Checker.Verdict v = check(4, List.of(live("audit", 30, key("b", 101))), List.of());
    assertThat(v.counts()).containsEntry("missing-after-heal", 1).containsEntry("release-undone", 1);
  }

  @Test
  void aBookingStillListedAfterTheFinalReleasesIsLeftBehind() {
    book("a", 1, 0, 10, 100, "w1");
    release("a", 100, 20, 21, Op.Type.OK, true);
    Checker.Verdict v = check(4, List.of(), List.of(live("final", 40, key("a", 100))));
    assertThat(v.counts()).containsEntry("left-behind", 1);
    assertThat(Checker.render(v, 3)).startsWith("VERDICT: INVALID").contains("left-behind: n1 still lists");
  }

  @Test
  void theHistoryRoundTripsThroughItsJsonLines() throws Exception {
    book("a", 1, 0, 10, 100, "w1");
    release("a", 100, 20, 21, Op.Type.OK, true);
    java.nio.file.Path file = java.nio.file.Files.createTempFile("history", ".jsonl");
    History.write(ops, file);
    assertThat(History.read(file)).isEqualTo(ops);
    java.nio.file.Files.delete(file);
  }
}
