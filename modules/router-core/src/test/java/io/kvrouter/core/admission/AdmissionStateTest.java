package io.kvrouter.core.admission;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.replication.LedgerSnapshot;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.testkit.LedgerInvariants;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class AdmissionStateTest {
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);
  private final List<Long> publishedVersions = new ArrayList<>();
  private AdmissionState state;

  @BeforeEach
  void setUp() {
    state = new AdmissionState("m", new AdmissionSettings(Duration.ofSeconds(300), Duration.ofSeconds(10)), clock,
        io.kvrouter.core.selection.KvOverlapSource.NONE,
        view -> publishedVersions.add(view.version()), 0);
    state.register(worker("a"));
    state.register(worker("b"));
    state.setPolicy("least_in_flight", Map.of("seed", "7"));
  }

  private BookingAnswer book(String requestId, long nonce) {
    BookOutcome outcome = state.book(Requests.of("m", requestId, 64), nonce, 0);
    assertThat(outcome).isInstanceOf(BookOutcome.Booked.class);
    return ((BookOutcome.Booked) outcome).answer();
  }

  @Test
  void releaseIsFencedAndIdempotent() {
    BookingAnswer booked = book("r1", 11);
    assertThat(state.release("r1", booked.attempt() + 1).applied()).as("wrong attempt").isFalse();
    assertThat(state.snapshot().bookings().size()).isEqualTo(1);
    assertThat(state.release("r1", booked.attempt()).applied()).isTrue();
    assertThat(state.release("r1", booked.attempt()).applied()).as("second release").isFalse();
    assertThat(state.release("unknown", 1).applied()).isFalse();
    assertThat(state.snapshot().bookings().size()).isZero();
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  @Test
  void staleAttemptCannotFreeANewerBookingOfTheSameRequestId() {
    BookingAnswer first = book("r1", 1);
    state.release("r1", first.attempt());
    BookingAnswer second = book("r1", 2);
    assertThat(second.attempt()).isGreaterThan(first.attempt());
    assertThat(state.release("r1", first.attempt()).applied()).isFalse();
    assertThat(state.markPrefillDone("r1", first.attempt()).applied()).isFalse();
    assertThat(state.renew("r1", first.attempt()).applied()).isFalse();
    assertThat(state.snapshot().bookings().size()).isEqualTo(1);
    assertThat(state.release("r1", second.attempt()).applied()).isTrue();
  }

  @Test
  void markPrefillDoneDropsPrefillOnceAndKeepsBlocks() {
    BookingAnswer booked = book("r1", 1);
    Rank rank = booked.selection().rank();
    RankLoad before = cell(rank);
    assertThat(before.prefillTokens()).isEqualTo(64);
    assertThat(before.decodeBlocks()).isEqualTo(4);
    clock.advance(Duration.ofSeconds(100));
    MutationResult marked = state.markPrefillDone("r1", booked.attempt());
    assertThat(marked.applied()).isTrue();
    assertThat(marked.leaseExpiresAtMillis()).isEqualTo(clock.millis() + 300_000);
    assertThat(cell(rank).prefillTokens()).isZero();
    assertThat(cell(rank).decodeBlocks()).isEqualTo(4);
    assertThat(state.markPrefillDone("r1", booked.attempt()).applied()).as("second mark").isFalse();
    assertThat(cell(rank).prefillTokens()).isZero();
    assertThat(state.release("r1", booked.attempt()).applied()).isTrue();
    assertThat(cell(rank)).extracting(RankLoad::inFlight, RankLoad::prefillTokens, RankLoad::decodeBlocks)
        .containsExactly(0, 0L, 0L);
  }

  @Test
  void replayReturnsTheSameBookingAndTheFirstCallsCancelIsANoOp() {
    BookingAnswer first = book("r1", 100);
    BookOutcome replay = state.book(Requests.of("m", "r1", 64), 200, 0);
    BookingAnswer again = ((BookOutcome.Booked) replay).answer();
    assertThat(again.replay()).isTrue();
    assertThat(again.attempt()).isEqualTo(first.attempt());
    assertThat(again.selection().rank()).isEqualTo(first.selection().rank());
    assertThat(state.snapshot().bookings().size()).isEqualTo(1);
    assertThat(state.cancelBook("r1", 100)).as("superseded nonce").isFalse();
    assertThat(state.snapshot().bookings().size()).isEqualTo(1);
    assertThat(state.cancelBook("r1", 200)).isTrue();
    assertThat(state.snapshot().bookings().size()).isZero();
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  /**
   * Calls of one request id may reach the actor out of order (a retry through another node is booked while the first
   * call is still buffered): the stale call is answered as a replay, and its CancelBook, sent when it timed out,
   * frees nothing the retry holds.
   */
  @Test
  void aStaleCallArrivingAfterItsRetryCannotFreeTheRetrysBooking() {
    BookingAnswer retry = book("r1", 2);
    BookOutcome stale = state.book(Requests.of("m", "r1", 64), 1, 0);
    assertThat(((BookOutcome.Booked) stale).answer().replay()).isTrue();
    assertThat(state.cancelBook("r1", 1)).as("the stale call gave up: the retry still holds the booking").isFalse();
    assertThat(state.markPrefillDone("r1", retry.attempt()).applied()).isTrue();
    assertThat(state.cancelBook("r1", 2)).as("the retry gives up too: nobody holds it").isTrue();
    assertThat(state.snapshot().bookings()).isEmpty();
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  /**
   * A replay numbered higher (the client lost the first answer and sent the Book again) takes the booking over: when
   * that replay's call is cancelled too, the client holds nothing, and the booking is freed.
   */
  @Test
  void aCancelledRetryFreesTheBookingItTookOver() {
    book("r1", 1);
    BookOutcome replay = state.book(Requests.of("m", "r1", 64).withRetry(1), 2, 0);
    assertThat(((BookOutcome.Booked) replay).answer().replay()).isTrue();
    assertThat(state.cancelBook("r1", 1)).as("the first call no longer holds it").isFalse();
    assertThat(state.snapshot().bookings()).hasSize(1);
    assertThat(state.cancelBook("r1", 2)).as("the retry gave up: nobody holds it").isTrue();
    assertThat(state.snapshot().bookings()).isEmpty();
  }

  /** A late copy of a call the client already retried is answered the booking but holds nothing of it. */
  @Test
  void aLateLowerNumberedCallHoldsNothing() {
    BookingAnswer retry = state.book(Requests.of("m", "r1", 64).withRetry(1), 2, 0) instanceof BookOutcome.Booked b
        ? b.answer() : null;
    assertThat(retry).isNotNull();
    BookOutcome stale = state.book(Requests.of("m", "r1", 64), 1, 0);
    assertThat(((BookOutcome.Booked) stale).answer().attempt()).isEqualTo(retry.attempt());
    assertThat(state.cancelBook("r1", 1)).isFalse();
    assertThat(state.snapshot().bookings()).hasSize(1);
    assertThat(state.cancelBook("r1", 2)).isTrue();
  }

  /** The retry number a booking's calls hold it by is in the snapshot, so a later incarnation keeps the rule. */
  @Test
  void theRetryNumberSurvivesASnapshot() {
    book("r1", 1);
    state.book(Requests.of("m", "r1", 64).withRetry(3), 2, 0);
    LedgerSnapshot.Entry entry = state.ledgerSnapshot().bookings().get(0);
    assertThat(entry.retry()).isEqualTo(3);
    assertThat(entry.nonces()).containsExactly(2L);
  }

  @Test
  void cancelBookFreesExactlyItsOwnBooking() {
    book("r1", 1);
    BookingAnswer other = book("r2", 2);
    assertThat(state.cancelBook("r1", 2)).as("nonce of another request").isFalse();
    assertThat(state.cancelBook("r1", 1)).isTrue();
    assertThat(state.snapshot().bookings().size()).isEqualTo(1);
    assertThat(state.snapshot().bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId)
        .containsExactly("r2");
    assertThat(state.release("r2", other.attempt()).applied()).isTrue();
  }

  @Test
  void leaseExpiresABookingNeverReleased() {
    BookingAnswer booked = book("r1", 1);
    clock.advance(Duration.ofSeconds(299));
    assertThat(state.expire()).isZero();
    assertThat(state.renew("r1", booked.attempt()).applied()).isTrue();
    clock.advance(Duration.ofSeconds(299));
    assertThat(state.expire()).as("renewed lease still running").isZero();
    clock.advance(Duration.ofSeconds(2));
    assertThat(state.expire()).isEqualTo(1);
    assertThat(state.snapshot().bookings().size()).isZero();
    assertThat(state.snapshot().expiredBookings()).isEqualTo(1);
    assertThat(state.release("r1", booked.attempt()).applied()).isFalse();
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  /** The clock does not move: only the floor handed over from the previous incarnation keeps attempts apart. */
  @Test
  void aRestartedStateInTheSameMillisecondIssuesAttemptsAboveThePreviousIncarnations() {
    long first = book("r1", 1).attempt();
    long second = book("r2", 2).attempt();
    AdmissionState restarted = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE,
        view -> {}, state.ledgerSnapshot().highestAttempt());
    restarted.register(worker("a"));
    long afterRestart = ((BookOutcome.Booked) restarted.book(Requests.of("m", "r1", 64), 3, 0)).answer()
        .attempt();
    assertThat(afterRestart).isGreaterThan(second).isGreaterThan(first);
    assertThat(restarted.release("r1", first).applied()).as("the old incarnation's attempt is fenced off").isFalse();
  }

  @Test
  void disposableOnlyWhenEmptyAndPastTheLastAttemptsMillisecond() {
    BookingAnswer booked = book("r1", 1);
    clock.advance(Duration.ofMillis(5));
    assertThat(state.isDisposable()).as("workers and a booking").isFalse();
    assertThat(state.release("r1", booked.attempt()).applied()).isTrue();
    state.deregister("a");
    assertThat(state.isDisposable()).as("a worker is left").isFalse();
    BookingAnswer last = book("r2", 2);
    state.deregister("b");
    assertThat(state.snapshot().bookings()).as("gone with its worker").isEmpty();
    assertThat(state.isDisposable()).as("same millisecond as the last attempt").isFalse();
    clock.advance(Duration.ofMillis(1));
    assertThat(state.isDisposable()).isTrue();
    AdmissionState next = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    next.register(worker("a"));
    long later = ((BookOutcome.Booked) next.book(Requests.of("m", "r3", 64), 3, 0)).answer().attempt();
    assertThat(later).as("a new incarnation started from floor 0").isGreaterThan(last.attempt());
  }

  @Test
  void registrationIsIdempotentAndConflictsAreRejectedWithoutChange() {
    long version = state.view().version();
    assertThat(state.register(worker("a")).created()).isFalse();
    WorkerConfig changed = new WorkerConfig("a", 0, 2, 8192, 1000, 16, "http://a", "local", WorkerRole.AGGREGATED);
    assertThatThrownBy(() -> state.register(changed)).isInstanceOfSatisfying(RoutingException.class,
        e -> assertThat(e.error().code()).isEqualTo(RoutingError.Code.ALREADY_EXISTS));
    WorkerConfig otherBlockSize = new WorkerConfig("c", 0, 1, 8192, 1000, 32, "", "", null);
    assertThatThrownBy(() -> state.register(otherBlockSize)).isInstanceOfSatisfying(RoutingException.class,
        e -> assertThat(e.error().reason()).isEqualTo(RoutingError.BLOCK_SIZE_MISMATCH));
    WorkerConfig zeroBlock = new WorkerConfig("d", 0, 1, 8192, 1000, 0, "", "", null);
    assertThatThrownBy(() -> state.register(zeroBlock)).isInstanceOfSatisfying(RoutingException.class,
        e -> assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_BLOCK_SIZE));
    assertThat(state.view().version()).isEqualTo(version);
    assertThat(state.view().rankCount()).isEqualTo(2);
  }

  @Test
  void deregisterDropsTheWorkersBookings() {
    state.setPolicy("round_robin", Map.of());
    BookingAnswer one = book("r1", 1);
    BookingAnswer two = book("r2", 2);
    assertThat(one.selection().rank().workerId()).isNotEqualTo(two.selection().rank().workerId());
    assertThat(state.deregister(one.selection().rank().workerId())).isEqualTo(1);
    assertThat(state.snapshot().bookings().size()).isEqualTo(1);
    assertThat(state.release("r1", one.attempt()).applied()).isFalse();
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
    assertThatThrownBy(() -> state.deregister("nope")).isInstanceOfSatisfying(RoutingException.class,
        e -> assertThat(e.error().reason()).isEqualTo(RoutingError.UNKNOWN_WORKER));
  }

  @Test
  void policyChangeKeepsBookingsAndPublishesANewView() {
    BookingAnswer booked = book("r1", 1);
    long version = state.view().version();
    state.setPolicy("kv", Map.of("temperature", "0.5"));
    assertThat(state.view().version()).isGreaterThan(version);
    assertThat(publishedVersions).contains(state.view().version());
    assertThat(state.view().policy().temperature()).isEqualTo(0.5);
    assertThat(state.snapshot().bookings().size()).isEqualTo(1);
    assertThat(state.release("r1", booked.attempt()).applied()).isTrue();
    assertThatThrownBy(() -> state.setPolicy("fastest", Map.of())).isInstanceOfSatisfying(RoutingException.class,
        e -> assertThat(e.error().reason()).isEqualTo(RoutingError.UNKNOWN_POLICY));
    assertThat(state.view().policy().policy().wireName()).isEqualTo("kv");
  }

  @Test
  void queueHoldsBooksWhileAllWorkersArePrefillBusyAndDispatchesOnRelease() {
    // each Book adds 8,000 prefill tokens; busy above 0.5 × 8192 max batched tokens
    state.setPolicy(null, Map.of("queue_threshold_frac", "0.5", "max_pending", "1"));
    SelectionRequest big = Requests.of("m", "x", 8000);
    BookingAnswer a = ((BookOutcome.Booked) state.book(Requests.withRequestId(big, "r1"), 1, 0)).answer();
    BookingAnswer b = ((BookOutcome.Booked) state.book(Requests.withRequestId(big, "r2"), 2, 0)).answer();
    assertThat(state.book(Requests.withRequestId(big, "r3"), 3, 0)).isInstanceOf(BookOutcome.Queued.class);
    BookOutcome rejected = state.book(Requests.withRequestId(big, "r4"), 4, 0);
    assertThat(rejected).isInstanceOfSatisfying(BookOutcome.Rejected.class, r -> {
      assertThat(r.error().code()).isEqualTo(RoutingError.Code.RESOURCE_EXHAUSTED);
      assertThat(r.error().reason()).isEqualTo(RoutingError.QUEUE_LIMIT);
    });
    assertThat(state.snapshot().pending()).isEqualTo(1);
    assertThat(state.drainCompletions()).isEmpty();
    clock.advance(Duration.ofMillis(5));
    state.release("r1", a.attempt());
    List<Completion> done = state.drainCompletions();
    assertThat(done).hasSize(1);
    assertThat(done.get(0).nonce()).isEqualTo(3);
    assertThat(done.get(0).outcome()).isInstanceOfSatisfying(BookOutcome.Booked.class,
        booked -> assertThat(booked.answer().queuedMicros()).isEqualTo(5_000));
    assertThat(state.snapshot().pending()).isZero();
    assertThat(state.release("r2", b.attempt()).applied()).isTrue();
  }

  @Test
  void queuedBookPastItsDeadlineIsRejected() {
    state.setPolicy(null, Map.of("queue_threshold_frac", "0.0"));
    book("busy-a", 1);
    book("busy-b", 2);
    long deadline = clock.millis() + 1000;
    assertThat(state.book(Requests.of("m", "r", 64), 9, deadline)).isInstanceOf(BookOutcome.Queued.class);
    clock.advance(Duration.ofMillis(1000));
    state.expire();
    List<Completion> done = state.drainCompletions();
    assertThat(done).singleElement().satisfies(c -> assertThat(c.outcome())
        .isInstanceOfSatisfying(BookOutcome.Rejected.class,
            r -> assertThat(r.error().code()).isEqualTo(RoutingError.Code.DEADLINE_EXCEEDED)));
    assertThat(state.snapshot().pending()).isZero();
  }

  @Test
  void aBookArrivingAfterItsDeadlineBooksNothing() {
    BookOutcome late = state.book(Requests.of("m", "late", 64), 1, clock.millis());
    assertThat(late).isInstanceOfSatisfying(BookOutcome.Rejected.class,
        r -> assertThat(r.error().code()).isEqualTo(RoutingError.Code.DEADLINE_EXCEEDED));
    assertThat(state.snapshot().bookings().size()).isZero();
  }

  @Test
  void cancelBookDropsAQueuedEntry() {
    state.setPolicy(null, Map.of("queue_threshold_frac", "0.0"));
    book("busy-a", 1);
    book("busy-b", 2);
    assertThat(state.book(Requests.of("m", "r", 64), 9, 0)).isInstanceOf(BookOutcome.Queued.class);
    assertThat(state.cancelBook("r", 9)).isTrue();
    assertThat(state.snapshot().pending()).isZero();
    assertThat(state.snapshot().bookings().size()).isEqualTo(2);
  }

  @Test
  void unknownModelIsRejected() {
    AdmissionState empty = new AdmissionState("nobody", AdmissionSettings.DEFAULTS, clock);
    assertThat(empty.book(Requests.of("nobody", "r", 10), 1, 0))
        .isInstanceOfSatisfying(BookOutcome.Rejected.class,
            r -> assertThat(r.error().reason()).isEqualTo(RoutingError.UNKNOWN_MODEL));
  }

  private RankLoad cell(Rank rank) {
    return state.view().cell(state.view().indexOf(rank)).booked();
  }
}
