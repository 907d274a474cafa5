package io.kvrouter.core.admission;

import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.membership.ViewState;
import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.replication.ModelReplica;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.replication.RecoveredState;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.sequences.ActivePrefixIndex;
import io.kvrouter.core.testkit.LedgerInvariants;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.RecordingOverlapSource;
import io.kvrouter.core.testkit.Replication;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A new incarnation built from a replica's copy: epoch, attempts, recomputed loads, and recovery mode. */
class RecoveryTest {
  private static final Duration WINDOW = Duration.ofSeconds(2);
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);
  private final RecordingOverlapSource recording = new RecordingOverlapSource();
  private AdmissionState old;
  private final List<BookingAnswer> booked = new ArrayList<>();

  @BeforeEach
  void setUp() {
    old = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE, view -> {}, 0);
    old.register(worker("a"));
    old.register(worker("b"));
    old.register(worker("c"));
    old.setPolicy("round_robin", Map.of("seed", "3"));
    for (int i = 0; i < 6; i++) {
      booked.add(book(old, "r" + i));
    }
    old.markPrefillDone("r0", booked.get(0).attempt());
    old.reportLoad("a", List.of(new RankReport(0, 5, 6, 1)));
  }

  private static BookingAnswer book(AdmissionState state, String requestId) {
    BookOutcome outcome = state.book(new io.kvrouter.core.selection.SelectionRequest("m", requestId,
        new long[] {1, 2, 3}, 64, 0, null, null, null, 0, null, null, null), 9, 0);
    assertThat(outcome).isInstanceOf(BookOutcome.Booked.class);
    return ((BookOutcome.Booked) outcome).answer();
  }

  /** The old owner's state as a replica holds it, with its load records made wrong on purpose. */
  private RecoveredState replicated() {
    ModelReplica replica = new ModelReplica("m", 10_000, KvOverlapSource.NONE, view -> {});
    Replication.drainOne(old, clock.millis());
    for (SnapshotChunk chunk : old.replicaSnapshot(clock.millis(), 4096)) {
      replica.apply(chunk, clock.millis());
    }
    RecoveredState copy = replica.recoveredState();
    List<RankRecord> skewed = new ArrayList<>();
    for (RankRecord load : copy.loads()) {
      skewed.add(new RankRecord(load.workerId(), load.dpRank(), new RankLoad(1_000_000, 77, 7_777, 777),
          load.reported()));
    }
    return new RecoveredState(copy.view(), skewed, copy.ledger(), copy.seq());
  }

  private AdmissionState recover(RecoveredState copy) {
    return AdmissionState.recover("m", AdmissionSettings.DEFAULTS, clock, recording, view -> {}, copy, WINDOW);
  }

  @Test
  void theEpochFollowsTheRecoveredOneAndTheClock() {
    RecoveredState copy = replicated();
    assertThat(recover(copy).epoch()).as("the clock stood still").isEqualTo(copy.view().epoch() + 1);
    clock.advance(Duration.ofMillis(10));
    assertThat(recover(copy).epoch()).as("the clock is ahead").isEqualTo(clock.millis());
    RecoveredState future = new RecoveredState(new io.kvrouter.core.membership.ViewState("m",
        clock.millis() + 5_000, 3, copy.view().workers(), copy.view().policy(), copy.view().parameters()),
        copy.loads(), copy.ledger(), copy.seq());
    assertThat(recover(future).epoch()).as("the recovered epoch is ahead of the clock")
        .isEqualTo(clock.millis() + 5_001);
  }

  @Test
  void bookingsLoadsAndAttemptsAreRecoveredAndLoadsAreRecomputedFromTheLedger() {
    AdmissionState recovered = recover(replicated());
    ModelSnapshot snapshot = recovered.snapshot();
    assertThat(snapshot.bookings()).hasSize(6);
    assertThat(LedgerInvariants.firstMismatch(snapshot)).as("loads recomputed, not the skewed records").isNull();
    assertThat(snapshot.epoch()).isEqualTo(recovered.epoch());
    assertThat(snapshot.recovering()).isTrue();
    assertThat(snapshot.policy()).isEqualTo("round_robin");
    assertThat(snapshot.workers()).extracting(w -> w.config().workerId()).containsExactly("a", "b", "c");
    ModelSnapshot.RankSnapshot a = snapshot.workers().get(0).ranks().get(0);
    assertThat(a.reported()).as("the last engine report is carried").isNotNull();
    assertThat(a.reported().prefillTokens()).isEqualTo(6);
    assertThat(snapshot.bookings()).filteredOn(b -> b.requestId().equals("r0")).singleElement()
        .satisfies(b -> assertThat(b.prefillDone()).isTrue());
    assertThat(recording.booked).hasSize(6);
    ActivePrefixIndex prefixes = (ActivePrefixIndex) recovered.view().activePrefix();
    Rank rank = booked.get(1).selection().rank();
    assertThat(prefixes.matchedDepth(rank, new long[] {1, 2, 3})).isEqualTo(3);

    // attempts stay above every recovered one, even with the clock standing still
    long highest = old.ledgerSnapshot().highestAttempt();
    recovered.reportLoad("a", List.of(new RankReport(0, 0, 0, 0)));
    recovered.reportLoad("b", List.of(new RankReport(0, 0, 0, 0)));
    recovered.reportLoad("c", List.of(new RankReport(0, 0, 0, 0)));
    assertThat(book(recovered, "fresh").attempt()).isGreaterThan(highest);

    // a recovered booking replays (same request id) and releases through the new incarnation
    BookingAnswer replay = book(recovered, "r1");
    assertThat(replay.replay()).isTrue();
    assertThat(replay.attempt()).isEqualTo(booked.get(1).attempt());
    assertThat(replay.epoch()).isEqualTo(recovered.epoch());
    assertThat(replay.selection().load()).as("a replay carries the load of now")
        .isEqualTo(recovered.view().cell(recovered.view().indexOf(rank)).booked());
    MutationResult released = recovered.release("r1", booked.get(1).attempt());
    assertThat(released.applied()).isTrue();
    assertThat(released.load().epoch()).isEqualTo(recovered.epoch());
    assertThat(released.load().rank()).isEqualTo(rank);
    assertThat(LedgerInvariants.firstMismatch(recovered.snapshot())).isNull();
  }

  /** The calls a booking was answered to travel in the deltas: after a failover a stale call's cancel frees nothing. */
  @Test
  void theCallsABookingWasAnsweredToSurviveRecovery() {
    ModelReplica replica = new ModelReplica("m", 10_000, KvOverlapSource.NONE, view -> {});
    Replication.drainOne(old, clock.millis());
    for (SnapshotChunk chunk : old.replicaSnapshot(clock.millis(), 4096)) {
      replica.apply(chunk, clock.millis());
    }
    // r1 was booked by call 9 (setUp); a retry through another node (call 20) was answered the same booking
    assertThat(old.book(new io.kvrouter.core.selection.SelectionRequest("m", "r1", new long[] {1, 2, 3}, 64, 0,
        null, null, null, 0, null, null, null), 20, 0)).isInstanceOf(BookOutcome.Booked.class);
    replica.apply(Replication.drainOne(old, clock.millis()), clock.millis());
    AdmissionState recovered = recover(replica.recoveredState());
    assertThat(recovered.cancelBook("r1", 9)).as("call 9 gave up; call 20 still holds r1").isFalse();
    assertThat(recovered.snapshot().bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId).contains("r1");
    assertThat(recovered.cancelBook("r1", 20)).isTrue();
    assertThat(recovered.snapshot().bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId)
        .doesNotContain("r1");
  }

  @Test
  void withNoReportSinceRecoveryABookIsRejectedRecovering() {
    AdmissionState recovered = recover(replicated());
    assertThat(recovered.recovering()).isTrue();
    BookOutcome outcome = recovered.book(Requests.of("m", "new", 64), 1, 0);
    assertThat(outcome).isInstanceOfSatisfying(BookOutcome.Rejected.class, rejected -> {
      assertThat(rejected.error().code()).isEqualTo(RoutingError.Code.UNAVAILABLE);
      assertThat(rejected.error().reason()).isEqualTo(RoutingError.RECOVERING);
    });
    assertThat(recovered.snapshot().bookings()).as("nothing booked").hasSize(6);
  }

  @Test
  void onlyWorkersThatReportedSinceRecoveryAreAdmitted() {
    AdmissionState recovered = recover(replicated());
    recovered.reportLoad("b", List.of(new RankReport(0, 0, 0, 0)));
    Set<String> chosen = new HashSet<>();
    for (int i = 0; i < 6; i++) {
      chosen.add(book(recovered, "n" + i).selection().rank().workerId());
    }
    assertThat(chosen).containsExactly("b");
    BookOutcome pinned = recovered.book(Requests.pinned(Requests.of("m", "p", 64), "a", null), 1, 0);
    assertThat(pinned).isInstanceOfSatisfying(BookOutcome.Rejected.class,
        r -> assertThat(r.error().reason()).isEqualTo(RoutingError.RECOVERING));
    BookOutcome allowed = recovered.book(Requests.allowed(Requests.of("m", "q", 64), Set.of("a", "c")), 1, 0);
    assertThat(allowed).isInstanceOfSatisfying(BookOutcome.Rejected.class,
        r -> assertThat(r.error().reason()).isEqualTo(RoutingError.RECOVERING));
    assertThat(recovered.recovering()).isTrue();
  }

  @Test
  void recoveryEndsWhenTheWindowHasPassed() {
    AdmissionState recovered = recover(replicated());
    clock.advance(WINDOW.minusMillis(1));
    assertThat(recovered.recovering()).isTrue();
    clock.advance(Duration.ofMillis(1));
    assertThat(recovered.recovering()).isFalse();
    Set<String> chosen = new HashSet<>();
    for (int i = 0; i < 6; i++) {
      chosen.add(book(recovered, "n" + i).selection().rank().workerId());
    }
    assertThat(chosen).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(recovered.snapshot().recovering()).isFalse();
  }

  @Test
  void recoveryEndsWhenEveryRecoveredWorkerHasReportedOrLeft() {
    AdmissionState recovered = recover(replicated());
    recovered.reportLoad("a", List.of(new RankReport(0, 0, 0, 0)));
    recovered.reportLoad("b", List.of(new RankReport(0, 0, 0, 0)));
    assertThat(recovered.recovering()).isTrue();
    recovered.deregister("c");
    assertThat(recovered.recovering()).isFalse();
    assertThat(book(recovered, "n").selection().rank().workerId()).isIn("a", "b");
  }

  @Test
  void aFreshStateIsNotRecovering() {
    assertThat(old.recovering()).isFalse();
    assertThat(old.snapshot().recovering()).isFalse();
    assertThat(old.epoch()).isEqualTo(clock.millis());
  }
}
