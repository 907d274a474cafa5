package io.kvrouter.core.selection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.admission.SessionOutcome;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.explain.Decision;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The strict data-parallel-rank pick: {@code pinned_dp_rank} without {@code pinned_worker} keeps only the ranks of that
 * dp rank (each worker's ranks being [dp_start, dp_start + dp_size)), explain shows the others as PINNED, and a dp rank
 * no worker has is FAILED_PRECONDITION UNKNOWN_DP_RANK with nothing booked.
 */
class DpRankPinTest {
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);
  private AdmissionState state;
  private int requests;

  private static WorkerConfig worker(String id, int dpStart, int dpSize, WorkerRole role) {
    return new WorkerConfig(id, dpStart, dpSize, 8192, 1000, 16, "http://" + id, "local", role);
  }

  @BeforeEach
  void setUp() {
    state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE, view -> {}, 0);
    state.register(worker("a", 0, 2, WorkerRole.AGGREGATED)); // ranks 0, 1
    state.register(worker("b", 2, 2, WorkerRole.AGGREGATED)); // ranks 2, 3
    state.register(worker("c", 0, 4, WorkerRole.AGGREGATED)); // ranks 0..3
    state.setPolicy("least_in_flight", Map.of("seed", "1"));
  }

  private SelectionRequest dpPinned(int dpRank) {
    return Requests.pinned(Requests.of("m", "r" + (requests++), 64), null, dpRank);
  }

  private Rank booked(SelectionRequest request) {
    BookOutcome outcome = state.book(request, requests, 0);
    assertThat(outcome).isInstanceOf(BookOutcome.Booked.class);
    return ((BookOutcome.Booked) outcome).answer().selection().rank();
  }

  @Test
  void aDpRankAloneKeepsOnlyTheRanksOfThatDpRankOnEveryWorker() {
    Set<Rank> dp1 = new HashSet<>();
    Set<Rank> dp3 = new HashSet<>();
    for (int i = 0; i < 8; i++) {
      dp1.add(booked(dpPinned(1)));
      dp3.add(booked(dpPinned(3)));
    }
    // least_in_flight spreads the Books over every rank the filter leaves, and only over those
    assertThat(dp1).containsExactlyInAnyOrder(new Rank("a", 1), new Rank("c", 1));
    assertThat(dp3).containsExactlyInAnyOrder(new Rank("b", 3), new Rank("c", 3));
    // the inline Select applies the same filter
    assertThat(Selector.select(state.view(), dpPinned(2), new Candidates(), clock.millis()).rank().dpRank())
        .isEqualTo(2);
  }

  @Test
  void explainShowsTheOtherDpRanksAsPinned() {
    SelectionRequest request = dpPinned(2);
    Candidates scratch = new Candidates();
    Selector.select(state.view(), request, scratch, clock.millis());
    Explanation explanation = Decision.capture(DecisionKind.SELECT, state.view(), request, scratch, clock.millis())
        .explain("n");
    assertThat(explanation.candidates()).extracting(Explanation.CandidateExplanation::rank)
        .containsExactlyInAnyOrder(new Rank("b", 2), new Rank("c", 2));
    assertThat(explanation.filtered()).hasSize(6).allSatisfy(f -> {
      assertThat(f.reason()).isEqualTo(FilterReason.PINNED.name());
      assertThat(f.rank().dpRank()).isNotEqualTo(2);
    });
  }

  @Test
  void aDpRankNoWorkerHasIsAPreconditionFailureAndBooksNothing() {
    booked(dpPinned(0));
    long version = state.view().version();
    BookOutcome outcome = state.book(dpPinned(4), 99, 0);
    assertThat(outcome).isInstanceOfSatisfying(BookOutcome.Rejected.class, r -> {
      assertThat(r.error().code()).isEqualTo(RoutingError.Code.FAILED_PRECONDITION);
      assertThat(r.error().reason()).isEqualTo(RoutingError.UNKNOWN_DP_RANK);
      assertThat(r.error().message()).contains("dp rank 4");
    });
    assertThatThrownBy(() -> Selector.select(state.view(), dpPinned(4), new Candidates(), clock.millis()))
        .isInstanceOfSatisfying(RoutingException.class,
            e -> assertThat(e.error().reason()).isEqualTo(RoutingError.UNKNOWN_DP_RANK));
    assertThat(state.snapshot().bookings()).as("only the first Book").hasSize(1);
    assertThat(state.view().version()).isEqualTo(version);
  }

  @Test
  void aDpRankWithAWorkerStillPinsThatWorkersRank() {
    assertThat(booked(Requests.pinned(Requests.of("m", "w", 64), "c", 3))).isEqualTo(new Rank("c", 3));
    // a pinned worker lacking the rank is still the unknown worker rank it was
    BookOutcome outcome = state.book(Requests.pinned(Requests.of("m", "w2", 64), "a", 3), 5, 0);
    assertThat(outcome).isInstanceOfSatisfying(BookOutcome.Rejected.class,
        r -> assertThat(r.error().reason()).isEqualTo(RoutingError.UNKNOWN_WORKER));
  }

  @Test
  void aRequestsDpRankWinsOverAHardSessionBoundToAnotherDpRank() {
    SelectionRequest first = Requests.pinned(Requests.of("m", "s0", 64), "a", 0)
        .withSession(SessionAffinity.of("s", SessionMode.HARD));
    assertThat(booked(first)).isEqualTo(new Rank("a", 0));
    BookOutcome outcome = state.book(dpPinned(1).withSession(SessionAffinity.of("s", SessionMode.HARD)), 7, 0);
    assertThat(outcome).isInstanceOfSatisfying(BookOutcome.Booked.class, b -> {
      assertThat(b.answer().selection().rank().dpRank()).isEqualTo(1);
      assertThat(b.answer().session().kind()).isEqualTo(SessionOutcome.Kind.REBOUND);
    });
    // the same dp rank as the binding keeps it
    BookOutcome kept = state.book(dpPinned(1).withSession(SessionAffinity.of("s", SessionMode.HARD)), 8, 0);
    assertThat(kept).isInstanceOfSatisfying(BookOutcome.Booked.class,
        b -> assertThat(b.answer().session().kind()).isEqualTo(SessionOutcome.Kind.KEPT));
  }

  @Test
  void aDpRankAloneFiltersBothHalvesOfAPair() {
    AdmissionState pd = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE, view -> {},
        0);
    pd.register(worker("p", 0, 2, WorkerRole.PREFILL));
    pd.register(worker("d", 0, 4, WorkerRole.DECODE));
    BookOutcome pair = pd.book(dpPinned(1), 1, 0);
    assertThat(pair).isInstanceOfSatisfying(BookOutcome.Booked.class, b -> {
      assertThat(b.answer().selection().rank()).isEqualTo(new Rank("p", 1));
      assertThat(b.answer().selection().decode().rank()).isEqualTo(new Rank("d", 1));
    });
    // dp rank 3: the decode worker has it, no prefill worker does
    BookOutcome refused = pd.book(dpPinned(3), 2, 0);
    assertThat(refused).isInstanceOfSatisfying(BookOutcome.Rejected.class, r -> {
      assertThat(r.error().reason()).isEqualTo(RoutingError.UNKNOWN_DP_RANK);
      assertThat(r.error().message()).contains("no prefill worker");
    });
    assertThat(pd.snapshot().bookings()).hasSize(1);
  }
}
