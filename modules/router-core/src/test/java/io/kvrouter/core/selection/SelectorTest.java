package io.kvrouter.core.selection;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.policy.PickerSlot;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.policy.Policy;
import io.kvrouter.core.testkit.Selections;
import io.kvrouter.core.testkit.Views;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SelectorTest {
  private final ManualClock clock = new ManualClock(1_000_000);

  private AdmissionState state(String policy) {
    AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    state.register(worker("a"));
    state.register(worker("b", 2));
    state.setPolicy(policy, Map.of("seed", "42"));
    return state;
  }

  private static RoutingError rejection(Runnable call) {
    try {
      call.run();
    } catch (RoutingException e) {
      return e.error();
    }
    throw new AssertionError("expected a rejection");
  }

  @Test
  void kvCostOfIdleRanksIsPrefillBlocksPlusRequestBlocks() {
    AdmissionState state = state("kv");
    SelectionResult result = Selections.select(state, clock, Requests.of("m", "", 100));
    // the default preset's scale: 32·(0 + 100)/16 prefill blocks + 0 decode + ceil(100/16) = 7 additional blocks
    assertThat(result.cost()).isEqualTo(32 * 100 / 16.0 + 7);
    state.setPolicy("kv", Map.of("preset", "dynamo"));
    // Dynamo's: (0 + 100)/16 + 7
    assertThat(Selections.select(state, clock, Requests.of("m", "", 100)).cost()).isEqualTo(100 / 16.0 + 7);
    assertThat(result.overlapBlocks()).isZero();
    assertThat(result.cachedTokens()).isZero();
    assertThat(result.policy()).isEqualTo("kv");
  }

  @Test
  void overridesChangeTheCost() {
    AdmissionState state = state("kv");
    SelectionRequest scaled = new SelectionRequest("m", "", null, 160, 0, null, null, null, 0, null, null, 2.0);
    assertThat(Selections.select(state, clock, scaled).cost()).isEqualTo(2.0 * 10 + 10);
  }

  @Test
  void errorsFollowDynamosOrder() {
    AdmissionState state = state("least_in_flight");
    SelectionRequest base = Requests.of("m", "", 64);
    assertThat(rejection(() -> Selections.select(state, clock, Requests.allowed(Requests.pinned(base, "a", null), Set.of("b")))))
        .extracting(RoutingError::code, RoutingError::reason)
        .containsExactly(RoutingError.Code.FAILED_PRECONDITION, RoutingError.PINNED_WORKER_NOT_ALLOWED);
    assertThat(rejection(() -> Selections.select(state, clock, Requests.pinned(base, "zz", null))).reason())
        .isEqualTo(RoutingError.UNKNOWN_WORKER);
    assertThat(rejection(() -> Selections.select(state, clock, Requests.pinned(base, "b", 5))).reason())
        .isEqualTo(RoutingError.UNKNOWN_WORKER);
    // overload every rank through engine reports: decode blocks above 0.5 × 1000
    state.setPolicy(null, Map.of("active_decode_blocks_threshold", "0.5"));
    state.reportLoad("a", List.of(new RankReport(0, 600, 0, 0)));
    assertThat(rejection(() -> Selections.select(state, clock, Requests.pinned(base, "a", null))))
        .extracting(RoutingError::code, RoutingError::reason)
        .containsExactly(RoutingError.Code.UNAVAILABLE, RoutingError.PINNED_WORKER_OVERLOADED);
    assertThat(Selections.select(state, clock, base).rank().workerId()).isEqualTo("b");
    state.reportLoad("b", List.of(new RankReport(0, 600, 0, 0), new RankReport(1, 600, 0, 0)));
    assertThat(rejection(() -> Selections.select(state, clock, base)).reason())
        .isEqualTo(RoutingError.ALL_WORKERS_OVERLOADED);
    // a heartbeat timeout makes the reporting workers unavailable: nothing eligible even ignoring overload
    clock.advance(Duration.ofSeconds(11));
    assertThat(rejection(() -> Selections.select(state, clock, base)).reason()).isEqualTo(RoutingError.NO_ENDPOINTS);
    state.reportLoad("a", List.of(new RankReport(0, 0, 0, 0)));
    assertThat(Selections.select(state, clock, base).rank().workerId()).isEqualTo("a");
  }

  @Test
  void allowedWorkersRestrictCandidates() {
    AdmissionState state = state("random");
    for (int i = 0; i < 50; i++) {
      assertThat(Selections.select(state, clock, Requests.allowed(Requests.of("m", "", 8), Set.of("b")))
          .rank().workerId()).isEqualTo("b");
    }
  }

  @Test
  void excludedWorkersAreNeverCandidatesAndAnExcludedPinIsNotAllowed() {
    AdmissionState state = state("random");
    SelectionRequest withoutB = Requests.of("m", "", 8).withExcludedWorkers(Set.of("b"));
    for (int i = 0; i < 50; i++) {
      assertThat(Selections.select(state, clock, withoutB).rank().workerId()).isEqualTo("a");
    }
    // exclusion wins over the allow list
    assertThat(rejection(() -> Selections.select(state, clock, Requests.allowed(Requests.of("m", "", 8), Set.of("b"))
        .withExcludedWorkers(Set.of("b")))).reason()).isEqualTo(RoutingError.NO_ENDPOINTS);
    assertThat(rejection(() -> Selections.select(state, clock, Requests.pinned(Requests.of("m", "", 8), "b", null)
        .withExcludedWorkers(Set.of("b")))))
        .extracting(RoutingError::code, RoutingError::reason)
        .containsExactly(RoutingError.Code.FAILED_PRECONDITION, RoutingError.PINNED_WORKER_NOT_ALLOWED);
    assertThat(rejection(() -> Selections.select(state, clock, Requests.of("m", "", 8)
        .withExcludedWorkers(Set.of("a", "b")))).reason()).isEqualTo(RoutingError.NO_ENDPOINTS);
  }

  @Test
  void aBookExcludingAWorkerBooksAnotherAndTheDecisionSaysWhy() {
    AdmissionState state = state("least_in_flight");
    Candidates scratch = new Candidates();
    SelectionRequest request = Requests.of("m", "r1", 8).withExcludedWorkers(Set.of("a"));
    Selector.select(state.view(), request, scratch, clock.millis());
    assertThat(scratch.filteredCount()).isEqualTo(1);
    assertThat(scratch.filteredReason(0)).isEqualTo(FilterReason.EXCLUDED);
    var outcome = state.book(request, 1L, clock.millis() + 1_000);
    assertThat(outcome).isInstanceOf(io.kvrouter.core.admission.BookOutcome.Booked.class);
    assertThat(((io.kvrouter.core.admission.BookOutcome.Booked) outcome).answer().selection().rank().workerId())
        .isEqualTo("b");
  }

  /**
   * Wiring only: two pickers restored from one state pick the same ranks from one view, for every policy (the
   * selection reads nothing but the view, the request and the picker). Actor/inline parity is checked in
   * router-cluster, through the real facade and the real actor.
   */
  @Test
  void pickersRestoredFromOneStatePickAlikeFromOneView() {
    Random random = new Random(1);
    for (Policy policy : Policy.values()) {
      AdmissionState state = state(policy.wireName());
      SelectionView view = state.view();
      for (int round = 0; round < 300; round++) {
        for (int i = 0; i < view.rankCount(); i++) {
          LoadCell cell = view.cell(i);
          RankLoad current = cell.booked();
          cell.apply(new RankLoad(current.seq() + 1, random.nextInt(4), random.nextInt(3000), random.nextInt(50)));
        }
        PickerState saved = view.picker().state();
        SelectionView left = Views.withPicker(view, new PickerSlot(policy, saved));
        SelectionView right = Views.withPicker(view, new PickerSlot(policy, saved));
        SelectionRequest request = new SelectionRequest("m", "", null, 1 + random.nextInt(4000), 0, null, null, null,
            0, random.nextBoolean() ? 0.7 : null, null, null);
        assertThat(Selector.select(left, request, new Candidates(), clock.millis()).rank())
            .as("%s round %d", policy, round)
            .isEqualTo(Selector.select(right, request, new Candidates(), clock.millis()).rank());
        Selector.select(view, request, Candidates.forCurrentThread(), clock.millis());
      }
    }
  }

  @Test
  void unknownModelWhenTheViewIsEmpty() {
    AdmissionState empty = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    assertThatThrownBy(() -> Selections.select(empty, clock, Requests.of("m", "", 1)))
        .isInstanceOfSatisfying(RoutingException.class,
            e -> assertThat(e.error().reason()).isEqualTo(RoutingError.UNKNOWN_MODEL));
  }

  @Test
  void requestLimitsRejectMalformedRequests() {
    RequestLimits limits = new RequestLimits(RequestLimits.DEFAULT_MAX_TOKENS);
    assertThat(rejection(() -> limits.validate(Requests.of("", "r", 1), false)).reason())
        .isEqualTo(RoutingError.EMPTY_MODEL);
    assertThat(rejection(() -> limits.validate(Requests.of("m", "", 1), true)).reason())
        .isEqualTo(RoutingError.EMPTY_REQUEST_ID);
    assertThat(rejection(() -> limits.validate(Requests.of("m", "r", 0), false)).reason())
        .isEqualTo(RoutingError.INVALID_SIZE);
    assertThat(rejection(() -> limits.validate(Requests.of("m", "r", 131_073), false)).reason())
        .isEqualTo(RoutingError.TOO_MANY_TOKENS);
    limits.validate(Requests.of("m", "r", 131_072), true);
  }
}
