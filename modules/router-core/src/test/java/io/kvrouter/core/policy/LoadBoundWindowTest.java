package io.kvrouter.core.policy;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.explain.Decision;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.CandidatesForTests;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The load bound's window: a rank's recent bookings, decaying with the window as time constant, count toward the
 * bound beside its in-flight requests, so a rank that just served many short requests (sessions between their turns)
 * loses its shared cache credit as a busy one does.
 */
class LoadBoundWindowTest {
  private static final int BLOCK = 16;

  private static Scoring bounded(int isl) {
    return new Scoring(isl, BLOCK, Scorers.requestBlocks(isl, BLOCK), 1.0, 1.0, 0.75, 0.25, 0, 0, 0, 1.25, 1.0);
  }

  @Test
  void recentBookingsDecayExponentiallyWithTheWindowAsTimeConstant() {
    RankLoad once = RankLoad.IDLE.booked(1, 0, 0, 10_000, 2_000);
    assertThat(once.inFlight()).isEqualTo(1);
    assertThat(once.recentBookingsAt(10_000, 2_000)).isEqualTo(1.0);
    assertThat(once.recentBookingsAt(12_000, 2_000)).isCloseTo(Math.exp(-1), within(1e-12));
    RankLoad twice = once.plus(2, -1, 0, 0).booked(3, 0, 0, 12_000, 2_000);
    assertThat(twice.inFlight()).as("a release leaves the recent count alone").isEqualTo(1);
    assertThat(twice.recentBookingsAt(12_000, 2_000)).isCloseTo(1 + Math.exp(-1), within(1e-12));
    assertThat(twice.recentBookingsAt(11_000, 2_000)).as("a clock behind the stamp does not grow it")
        .isCloseTo(1 + Math.exp(-1), within(1e-12));
    assertThat(RankLoad.IDLE.booked(1, 0, 0, 10_000, 0).recentBookings()).as("window off").isZero();
  }

  @Test
  void aRankWithManyRecentBookingsIsOverTheBoundThoughNothingIsInFlight() {
    Candidates c = CandidatesForTests.empty(2);
    CandidatesForTests.addWithRecent(c, 0, 3.0, 8, 0); // served 3 requests just now, none running
    CandidatesForTests.addWithRecent(c, 0, 0.0, 8, 0); // the same 8 blocks: the state is shared
    // bound ceil(1.25·(3 + 0 + 1)/2) = 3: rank 0's 3 + 1 is over it, rank 1's 0 + 1 is not
    assertThat(Scorers.loadBound(c, bounded(160))).isEqualTo(3);
    Scorers.kv(c, bounded(160));
    assertThat(c.cost(0)).as("no credit").isEqualTo(160 / 16.0 + 10);
    assertThat(c.cost(1)).as("credit for 8 blocks").isEqualTo(160 / 16.0 - 8 + 10);
    assertThat(Scorers.KV.terms(bounded(160), c, 0).get("load_bound")).isEqualTo(8.0);
    // the same loads as in-flight requests only: no rank is over ceil(1.25·1/2) = 1 with 0 + 1
    Candidates none = CandidatesForTests.empty(2);
    CandidatesForTests.addWithRecent(none, 0, 0.0, 8, 0);
    CandidatesForTests.addWithRecent(none, 0, 0.0, 8, 0);
    Scorers.kv(none, bounded(160));
    assertThat(none.cost(0)).isEqualTo(none.cost(1)).isEqualTo(160 / 16.0 - 8 + 10);
  }

  @Test
  void theWindowIsTenSecondsByDefaultAndOffInDynamosPresetWhereBookingsLeaveNoRecentCount() {
    ManualClock clock = new ManualClock(1_000_000);
    AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    state.register(worker("w1"));
    assertThat(state.view().policy().loadBoundWindowMillis()).isEqualTo(10_000);
    state.book(Requests.of("m", "r1", 160), 1, 0);
    assertThat(state.view().cell(0).booked().recentBookings()).isEqualTo(1.0);
    state.setPolicy("kv", Map.of(PolicyConfig.PRESET, "dynamo"));
    assertThat(state.view().policy().loadBoundWindow()).isZero();
    double before = state.view().cell(0).booked().recentBookings();
    state.book(Requests.of("m", "r2", 160), 2, 0);
    assertThat(state.view().cell(0).booked().recentBookings()).isEqualTo(before);
  }

  /**
   * With the window on, a Book adds a recent booking to its rank that outlives the booking's release and decays with
   * time; a Select projects it into its candidates, and explain reads it back as the selection scored it.
   */
  @Test
  void aBookingsRankKeepsARecentBookingAfterItsReleaseThatSelectionsAndExplainRead() {
    ManualClock clock = new ManualClock(1_000_000);
    AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    state.register(worker("w1"));
    state.register(worker("w2"));
    state.setPolicy("kv", Map.of(PolicyConfig.LOAD_BOUND_WINDOW, "2"));
    assertThat(state.view().policy().loadBoundWindowMillis()).isEqualTo(2_000);
    for (int k = 0; k < 3; k++) {
      BookOutcome.Booked booked = (BookOutcome.Booked) state.book(
          Requests.pinned(Requests.of("m", "r" + k, 160), "w1", null), k, 0);
      assertThat(state.release("r" + k, booked.answer().attempt()).applied()).isTrue();
    }
    clock.advance(Duration.ofSeconds(2));
    SelectionRequest request = Requests.of("m", "", 160);
    Candidates scratch = new Candidates();
    Selector.select(state.view(), request, scratch, clock.millis());
    int w1 = indexOf(state, scratch, "w1");
    int w2 = indexOf(state, scratch, "w2");
    assertThat(scratch.inFlight(w1)).isZero();
    assertThat(scratch.recentBookings(w1)).isCloseTo(3 * Math.exp(-1), within(1e-9));
    assertThat(scratch.recentBookings(w2)).isZero();
    assertThat(scratch.totalBoundLoad()).isCloseTo(3 * Math.exp(-1), within(1e-9));
    Explanation e = Decision.capture(DecisionKind.SELECT, state.view(), request, scratch, clock.millis())
        .explain("n");
    for (Explanation.CandidateExplanation k : e.candidates()) {
      assertThat(k.costTerms().values().stream().mapToDouble(Double::doubleValue).sum()).as("%s", k.rank())
          .isCloseTo(k.cost(), within(1e-9));
    }
  }

  private static int indexOf(AdmissionState state, Candidates c, String workerId) {
    for (int i = 0; i < c.size(); i++) {
      if (state.view().rank(c.rankIndex(i)).equals(new Rank(workerId, 0))) {
        return i;
      }
    }
    throw new AssertionError(workerId + " is no candidate");
  }
}
