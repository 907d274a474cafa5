package io.kvrouter.core.selection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.explain.Decision;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.replication.ModelReplica;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Placement constraints: required taints filter (and a clear error when none is left), preferred taints multiply the
 * cost (shown in explain), malformed taints are refused, taints travel with the view to replicas, and a hard session
 * bound to a worker the request's required taints exclude is rebound.
 */
class PlacementConstraintsTest {
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);
  private AdmissionState state;
  private int requests;

  private static WorkerConfig worker(String id, String... taints) {
    return new WorkerConfig(id, 0, 1, 8192, 1000, 16, "http://" + id, "local", WorkerRole.AGGREGATED, Set.of(taints), null);
  }

  @BeforeEach
  void setUp() {
    state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE, view -> {}, 0);
    state.register(worker("a", "gpu=h100", "zone=eu-1"));
    state.register(worker("b", "gpu=a100", "zone=eu-1"));
    state.register(worker("c", "spot"));
    state.setPolicy("least_in_flight", Map.of("seed", "1"));
  }

  private SelectionRequest request(List<String> required, List<String> preferred, Double multiplier) {
    return SelectionRequests.withPlacement(Requests.of("m", "r" + (requests++), 64), required, preferred, multiplier);
  }

  private String booked(SelectionRequest request) {
    BookOutcome outcome = state.book(request, requests, 0);
    assertThat(outcome).isInstanceOf(BookOutcome.Booked.class);
    return ((BookOutcome.Booked) outcome).answer().selection().rank().workerId();
  }

  @Test
  void requiredTaintsKeepOnlyTheWorkersCarryingAllOfThem() {
    for (int i = 0; i < 6; i++) {
      assertThat(booked(request(List.of("zone=eu-1"), List.of(), null))).isIn("a", "b");
      assertThat(booked(request(List.of("zone=eu-1", "gpu=h100"), List.of(), null))).isEqualTo("a");
    }
    int bookings = state.snapshot().bookings().size();
    BookOutcome none = state.book(request(List.of("gpu=h100", "spot"), List.of(), null), 1, 0);
    assertThat(none).isInstanceOfSatisfying(BookOutcome.Rejected.class, r -> {
      assertThat(r.error().code()).isEqualTo(RoutingError.Code.FAILED_PRECONDITION);
      assertThat(r.error().reason()).isEqualTo(RoutingError.REQUIRED_TAINTS_UNMET);
      assertThat(r.error().message()).contains("gpu=h100").contains("3 ranks lack one");
    });
    assertThat(state.snapshot().bookings()).as("nothing booked").hasSize(bookings);
  }

  @Test
  void preferredTaintsMultiplyTheCostAndExplainShowsIt() {
    // a: 2 in flight, b and c: 1; preferring gpu=h100 at 0.4 makes a cost 0.8, below the others' 1
    booked(Requests.pinned(Requests.of("m", "x1", 64), "a", 0));
    booked(Requests.pinned(Requests.of("m", "x2", 64), "a", 0));
    booked(Requests.pinned(Requests.of("m", "x3", 64), "b", 0));
    booked(Requests.pinned(Requests.of("m", "x4", 64), "c", 0));
    SelectionRequest preferring = request(List.of(), List.of("gpu=h100"), 0.4);
    Candidates scratch = new Candidates();
    SelectionResult result = Selector.select(state.view(), preferring, scratch, clock.millis());
    assertThat(result.rank().workerId()).isEqualTo("a");
    assertThat(result.cost()).isCloseTo(0.8, org.assertj.core.data.Offset.offset(1e-9));
    Explanation explanation = Decision.capture(DecisionKind.SELECT, state.view(), preferring, scratch,
        clock.millis()).explain("n");
    Explanation.CandidateExplanation a = explanation.candidates().stream()
        .filter(c -> c.rank().workerId().equals("a")).findFirst().orElseThrow();
    assertThat(a.costTerms().get("preferred_taints")).isCloseTo(-1.2, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(explanation.candidates().stream().filter(c -> !c.rank().workerId().equals("a")))
        .allSatisfy(c -> assertThat(c.costTerms()).doesNotContainKey("preferred_taints"));
    // at the default 0.5, a costs 1 like the others: no longer strictly preferred
    SelectionRequest defaulted = request(List.of(), List.of("gpu=h100"), null);
    assertThat(defaulted.placement().preferredTaintMultiplier()).isEqualTo(0.5);
  }

  @Test
  void malformedTaintsAndMultipliersAreRefused() {
    for (String bad : List.of("", "=x", "-gpu", "gpu=h100=2", "has space", "ü", "k".repeat(64))) {
      assertThatThrownBy(() -> request(List.of(bad), List.of(), null)).as(bad)
          .isInstanceOfSatisfying(RoutingException.class,
              e -> assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_TAINT));
      assertThatThrownBy(() -> io.kvrouter.core.model.Taints.parse("taints", List.of(bad))).as(bad)
          .isInstanceOf(RoutingException.class);
    }
    assertThatThrownBy(() -> request(List.of(), List.of("gpu"), 1.5)).isInstanceOfSatisfying(
        RoutingException.class, e -> assertThat(e.error().reason()).isEqualTo(RoutingError.MALFORMED));
    java.util.List<String> many = new java.util.ArrayList<>();
    for (int i = 0; i < 33; i++) {
      many.add("t" + i);
    }
    assertThatThrownBy(() -> request(many, List.of(), null)).isInstanceOfSatisfying(RoutingException.class,
        e -> assertThat(e.error().reason()).isEqualTo(RoutingError.TOO_MANY_ITEMS));
  }

  @Test
  void workersTaintsTravelWithTheViewToReplicas() {
    ModelReplica replica = new ModelReplica("m", 10_000, KvOverlapSource.NONE, view -> {});
    for (SnapshotChunk chunk : state.replicaSnapshot(clock.millis(), 4096)) {
      replica.apply(chunk, clock.millis());
    }
    assertThat(replica.view().worker("a").taints()).containsExactly("gpu=h100", "zone=eu-1");
    assertThat(replica.view().worker("c").taints()).containsExactly("spot");
  }

  @Test
  void aHardSessionOnAWorkerTheRequiredTaintsExcludeIsReboundOnce() {
    SelectionRequest first = Requests.pinned(Requests.of("m", "s0", 64), "c", 0)
        .withSession(SessionAffinity.of("s", SessionMode.HARD));
    assertThat(booked(first)).isEqualTo("c");
    SelectionRequest onlyEu = request(List.of("zone=eu-1"), List.of(), null)
        .withSession(SessionAffinity.of("s", SessionMode.HARD));
    BookOutcome outcome = state.book(onlyEu, 77, 0);
    assertThat(outcome).isInstanceOfSatisfying(BookOutcome.Booked.class, b -> {
      assertThat(b.answer().selection().rank().workerId()).isIn("a", "b");
      assertThat(b.answer().session().kind()).isEqualTo(io.kvrouter.core.admission.SessionOutcome.Kind.REBOUND);
    });
  }
}
