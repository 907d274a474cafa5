package io.kvrouter.core.admission;

import io.kvrouter.core.model.SessionMode;
import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.replication.ModelReplica;
import io.kvrouter.core.replication.RecoveredState;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.SessionBinding;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SessionAffinity;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Replication;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Session affinity in the admission state: binding, soft preference against the cost, hard pins and their one
 * rebind, idle expiry on a manual clock, the LRU bound, a removed worker, replication and recovery of the bindings.
 */
class SessionAffinityTest {
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);
  private AdmissionState state;
  private int requests;

  @BeforeEach
  void setUp() {
    state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE, view -> {}, 0);
    state.register(worker("a"));
    state.register(worker("b"));
    state.setPolicy("least_in_flight", Map.of("seed", "7"));
  }

  private SelectionRequest request(String session, SessionMode mode) {
    SelectionRequest r = Requests.of("m", "r" + (requests++), 64);
    return session == null ? r : r.withSession(SessionAffinity.of(session, mode));
  }

  private BookingAnswer book(SelectionRequest request) {
    BookOutcome outcome = state.book(request, requests, 0);
    assertThat(outcome).isInstanceOf(BookOutcome.Booked.class);
    return ((BookOutcome.Booked) outcome).answer();
  }

  private BookingAnswer book(String session, SessionMode mode) {
    return book(request(session, mode));
  }

  /** Books {@code n} session-less requests pinned on {@code worker} (load that counts against it). */
  private void load(String worker, int n) {
    for (int i = 0; i < n; i++) {
      book(Requests.pinned(request(null, null), worker, 0));
    }
  }

  private Map<String, Rank> bindings(List<SessionBinding> list) {
    return list.stream().collect(Collectors.toMap(SessionBinding::sessionId, SessionBinding::rank));
  }

  @Test
  void aFirstBookBindsTheSessionAndLaterBooksKeepItsRank() {
    state.setPolicy("", Map.of("session_soft_factor", "0")); // soft, kept wherever its rank is eligible
    BookingAnswer first = book("s", SessionMode.DEFAULT);
    assertThat(first.session().kind()).isEqualTo(SessionOutcome.Kind.BOUND);
    assertThat(first.session().mode()).as("the model's default mode").isEqualTo(SessionMode.SOFT);
    Rank bound = first.selection().rank();
    for (int i = 0; i < 3; i++) {
      BookingAnswer next = book("s", SessionMode.DEFAULT);
      assertThat(next.selection().rank()).isEqualTo(bound);
      assertThat(next.session().kind()).isEqualTo(SessionOutcome.Kind.KEPT);
    }
    assertThat(state.snapshot().sessions().bindings()).isEqualTo(1);
    assertThat(bindings(state.snapshot().sessions().recent())).containsEntry("s", bound);
  }

  @Test
  void aSoftBindingIsWeighedAgainstTheCostAndARebindIsReported() {
    state.setPolicy("", Map.of("session_soft_factor", "0.5"));
    Rank bound = book("s", SessionMode.SOFT).selection().rank(); // bound rank: 1 in flight
    String other = bound.workerId().equals("a") ? "b" : "a";
    load(other, 1); // other: 1, bound: 1; bound counts 0.5 (and less): kept
    BookingAnswer kept = book("s", SessionMode.SOFT);
    assertThat(kept.selection().rank()).isEqualTo(bound);
    assertThat(kept.session().kind()).isEqualTo(SessionOutcome.Kind.KEPT);
    // bound: 2 in flight counts just under 1 against other's 1: still kept
    assertThat(book("s", SessionMode.SOFT).selection().rank()).isEqualTo(bound);
    // bound: 3 in flight counts 1.5 against 1: the cost outweighs the preference
    BookingAnswer moved = book("s", SessionMode.SOFT);
    assertThat(moved.selection().rank().workerId()).isEqualTo(other);
    assertThat(moved.session().kind()).isEqualTo(SessionOutcome.Kind.REBOUND);
    assertThat(moved.session().previous()).isEqualTo(bound);
    assertThat(bindings(state.snapshot().sessions().recent())).containsEntry("s", moved.selection().rank());
    assertThat(state.snapshot().sessions().counters().rebound()).isEqualTo(1);
  }

  @Test
  void underAPolicyThatWeighsNoCostASoftBindingIsKeptWhileItsRankIsEligible() {
    state.setPolicy("round_robin", Map.of());
    Rank bound = book("s", SessionMode.SOFT).selection().rank();
    for (int i = 0; i < 4; i++) {
      assertThat(book("s", SessionMode.SOFT).selection().rank()).isEqualTo(bound);
    }
    BookingAnswer moved = book(request("s", SessionMode.SOFT).withExcludedWorkers(Set.of(bound.workerId())));
    assertThat(moved.session().kind()).isEqualTo(SessionOutcome.Kind.REBOUND);
    assertThat(moved.session().previous()).isEqualTo(bound);
  }

  @Test
  void aHardBindingKeepsItsRankWhateverTheLoad() {
    Rank bound = book("s", SessionMode.HARD).selection().rank();
    String other = bound.workerId().equals("a") ? "b" : "a";
    load(bound.workerId(), 5);
    BookingAnswer kept = book("s", SessionMode.HARD);
    assertThat(kept.selection().rank()).isEqualTo(bound);
    assertThat(kept.session().kind()).isEqualTo(SessionOutcome.Kind.KEPT);
    assertThat(other).isNotEqualTo(bound.workerId());
  }

  @Test
  void aHardBindingWhoseRankIsNoLongerEligibleIsReboundOnce() {
    Rank bound = book("s", SessionMode.HARD).selection().rank();
    SelectionRequest excluding = request("s", SessionMode.HARD)
        .withExcludedWorkers(Set.of(bound.workerId()));
    BookingAnswer moved = book(excluding);
    assertThat(moved.selection().rank()).isNotEqualTo(bound);
    assertThat(moved.session().kind()).isEqualTo(SessionOutcome.Kind.REBOUND);
    assertThat(moved.session().previous()).isEqualTo(bound);
    assertThat(state.snapshot().sessions().counters().invalidated()).isEqualTo(1);
    assertThat(state.snapshot().sessions().counters().rebound()).isEqualTo(1);
    assertThat(state.snapshot().sessions().counters().bound()).isEqualTo(1);
    // the new binding holds from now on, the old rank eligible again or not
    assertThat(book("s", SessionMode.HARD).selection().rank()).isEqualTo(moved.selection().rank());

    // once only: when no rank is eligible after the rebind the Book is rejected, and nothing is booked
    int bookings = state.snapshot().bookings().size();
    SelectionRequest excludingAll = request("s", SessionMode.HARD).withExcludedWorkers(Set.of("a", "b"));
    assertThat(state.book(excludingAll, 99, 0)).isInstanceOf(BookOutcome.Rejected.class);
    assertThat(state.snapshot().bookings()).hasSize(bookings);
  }

  @Test
  void aHardBindingOnAnOverloadedRankIsThatRankOrNothing() {
    Rank bound = book("s", SessionMode.HARD).selection().rank();
    load(bound.workerId(), 2);
    state.setPolicy("", Map.of("active_decode_blocks_threshold", "0.5"));
    state.reportLoad(bound.workerId(), List.of(new RankReport(0, 600, 0, 0))); // decode blocks above 0.5 × 1000
    BookOutcome outcome = state.book(request("s", SessionMode.HARD), 1234, 0);
    assertThat(outcome).isInstanceOf(BookOutcome.Rejected.class);
    assertThat(((BookOutcome.Rejected) outcome).error().reason()).isEqualTo(RoutingError.PINNED_WORKER_OVERLOADED);
    assertThat(bindings(state.snapshot().sessions().recent())).as("the binding stays").containsEntry("s", bound);
  }

  @Test
  void aBindingEndsAfterItsIdleTtlAndEveryBookRefreshesIt() {
    state.setPolicy("", Map.of("session_ttl_ms", "1000"));
    Rank bound = book("s", SessionMode.HARD).selection().rank();
    clock.advance(Duration.ofMillis(900));
    state.expire();
    assertThat(book("s", SessionMode.HARD).session().kind()).isEqualTo(SessionOutcome.Kind.KEPT);
    clock.advance(Duration.ofMillis(900)); // 1,800 ms after binding, 900 after the last Book
    state.expire();
    assertThat(state.snapshot().sessions().bindings()).isEqualTo(1);
    clock.advance(Duration.ofMillis(100));
    state.expire();
    assertThat(state.snapshot().sessions().bindings()).isZero();
    assertThat(state.snapshot().sessions().counters().expired()).isEqualTo(1);
    BookingAnswer again = book("s", SessionMode.HARD);
    assertThat(again.session().kind()).as("bound afresh").isEqualTo(SessionOutcome.Kind.BOUND);
    assertThat(bound).isNotNull();
  }

  @Test
  void anExpiredBindingIsNotHonouredBeforeTheSweep() {
    state.setPolicy("", Map.of("session_ttl_ms", "1000"));
    book("s", SessionMode.HARD);
    clock.advance(Duration.ofMillis(1000));
    assertThat(book("s", SessionMode.HARD).session().kind()).isEqualTo(SessionOutcome.Kind.BOUND);
  }

  @Test
  void atTheBoundANewSessionEndsTheLeastRecentlyUsedBinding() {
    state.setPolicy("", Map.of("session_max_bindings", "2"));
    book("s1", SessionMode.SOFT);
    book("s2", SessionMode.SOFT);
    clock.advance(Duration.ofMillis(1));
    book("s1", SessionMode.SOFT); // s2 is now the least recently used
    book("s3", SessionMode.SOFT);
    ModelSnapshot.SessionsSnapshot sessions = state.snapshot().sessions();
    assertThat(bindings(sessions.recent()).keySet()).containsExactlyInAnyOrder("s1", "s3");
    assertThat(sessions.recent().get(0).sessionId()).as("most recent first").isEqualTo("s3");
    assertThat(sessions.maxBindings()).isEqualTo(2);
    assertThat(sessions.counters().evicted()).isEqualTo(1);
  }

  @Test
  void aRemovedWorkerEndsItsBindings() {
    Rank bound = book("s", SessionMode.HARD).selection().rank();
    state.deregister(bound.workerId());
    assertThat(state.snapshot().sessions().bindings()).isZero();
    assertThat(state.snapshot().sessions().counters().invalidated()).isEqualTo(1);
    BookingAnswer next = book("s", SessionMode.HARD);
    assertThat(next.session().kind()).isEqualTo(SessionOutcome.Kind.BOUND);
    assertThat(next.selection().rank().workerId()).isNotEqualTo(bound.workerId());
  }

  @Test
  void affinityOffBindsNothing() {
    state.setPolicy("", Map.of("session_ttl_ms", "500"));
    book("s", SessionMode.SOFT);
    state.setPolicy("", Map.of("session_ttl_ms", "0"));
    assertThat(state.snapshot().sessions().bindings()).as("turning it off ends every binding").isZero();
    BookingAnswer answer = book("s", SessionMode.HARD);
    assertThat(answer.session()).isNull();
    assertThat(state.snapshot().sessions().bindings()).isZero();
  }

  @Test
  void badSessionParametersAreRejectedAndChangeNothing() {
    Map<String, String> before = state.snapshot().policyParameters();
    for (Map<String, String> bad : List.of(Map.of("session_max_bindings", "1000001"),
        Map.of("session_max_bindings", "0"), Map.of("session_mode", "sticky"), Map.of("session_mode", "default"),
        Map.of("session_ttl_ms", "-1"), Map.of("session_soft_factor", "1.5"), Map.of("session_ttl_ms", "soon"))) {
      assertThatThrownBy(() -> state.setPolicy("", bad)).as(bad.toString())
          .isInstanceOfSatisfying(RoutingException.class, e -> {
            assertThat(e.error().code()).isEqualTo(RoutingError.Code.INVALID_ARGUMENT);
            assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_POLICY_PARAMETER);
            assertThat(e.error().message()).contains(bad.keySet().iterator().next());
          });
    }
    assertThatThrownBy(() -> state.setPolicy("", Map.of("session_max_bindings", "2000000")))
        .hasMessageContaining("too many bindings");
    assertThat(state.snapshot().policyParameters()).isEqualTo(before);
  }

  @Test
  void replicasHoldTheOwnersBindingsThroughDeltasAndSnapshots() {
    ModelReplica replica = new ModelReplica("m", 10_000, KvOverlapSource.NONE, view -> {});
    for (SnapshotChunk chunk : state.replicaSnapshot(clock.millis(), 4096)) {
      replica.apply(chunk, clock.millis());
    }
    state.setPolicy("", Map.of("session_max_bindings", "3", "session_ttl_ms", "1000"));
    for (int round = 0; round < 4; round++) {
      for (int s = 0; s < 5; s++) {
        book("s" + ((s * 7 + round) % 5), s % 2 == 0 ? SessionMode.HARD : SessionMode.SOFT);
        clock.advance(Duration.ofMillis(150));
      }
      state.expire();
      ReplicaDelta delta = Replication.drainOne(state, clock.millis());
      if (delta != null) {
        assertThat(replica.apply(delta, clock.millis())).isEqualTo(ModelReplica.Outcome.APPLIED);
      }
      assertThat(replica.sessions().values()).as("round " + round)
          .containsExactlyInAnyOrderElementsOf(state.snapshot().sessions().recent());
    }
    // a snapshot in small chunks carries the bindings too
    Replication.drainOne(state, clock.millis());
    List<SnapshotChunk> chunks = state.replicaSnapshot(clock.millis(), 600);
    assertThat(chunks.size()).isGreaterThan(1);
    RecoveredState copy = RecoveredState.of(chunks);
    assertThat(copy.sessions()).containsExactlyInAnyOrderElementsOf(state.snapshot().sessions().recent());
  }

  @Test
  void bindingsSurviveARecoveryFromAReplicasCopy() {
    Map<String, Rank> bound = new HashMap<>();
    for (int s = 0; s < 6; s++) {
      bound.put("s" + s, book("s" + s, SessionMode.HARD).selection().rank());
    }
    ModelReplica replica = new ModelReplica("m", 10_000, KvOverlapSource.NONE, view -> {});
    Replication.drainOne(state, clock.millis());
    for (SnapshotChunk chunk : state.replicaSnapshot(clock.millis(), 4096)) {
      replica.apply(chunk, clock.millis());
    }
    AdmissionState recovered = AdmissionState.recover("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE,
        view -> {}, replica.recoveredState(), Duration.ofSeconds(2));
    assertThat(bindings(recovered.snapshot().sessions().recent())).isEqualTo(bound);

    // while its worker has not reported since the failover, a session waits for it rather than move
    recovered.reportLoad("a", List.of(new RankReport(0, 0, 0, 0)));
    String onB = bound.entrySet().stream().filter(e -> e.getValue().workerId().equals("b")).findFirst()
        .orElseThrow().getKey();
    BookOutcome waiting = recovered.book(request(onB, SessionMode.SOFT), 1, 0);
    assertThat(waiting).isInstanceOfSatisfying(BookOutcome.Rejected.class,
        r -> assertThat(r.error().reason()).isEqualTo(RoutingError.RECOVERING));
    recovered.reportLoad("b", List.of(new RankReport(0, 0, 0, 0)));
    for (Map.Entry<String, Rank> e : bound.entrySet()) {
      BookOutcome outcome = recovered.book(request(e.getKey(), SessionMode.HARD), 2, 0);
      assertThat(outcome).isInstanceOfSatisfying(BookOutcome.Booked.class, b -> {
        assertThat(b.answer().selection().rank()).isEqualTo(e.getValue());
        assertThat(b.answer().session().kind()).isEqualTo(SessionOutcome.Kind.KEPT);
      });
    }
  }

  @Test
  void explainShowsTheSoftAffinityTermBesideTheScorersOwn() {
    load("a", 2);
    load("b", 1);
    SelectionRequest preferringA = Requests.of("m", "x", 64)
        .withSession(SessionAffinity.of("s", SessionMode.SOFT).preferring(new Rank("a", 0), 0.5));
    io.kvrouter.core.selection.Candidates scratch = new io.kvrouter.core.selection.Candidates();
    io.kvrouter.core.selection.SelectionResult result =
        io.kvrouter.core.selection.Selector.select(state.view(), preferringA, scratch, clock.millis());
    assertThat(result.rank()).as("2 in flight at half weight, just under b's 1").isEqualTo(new Rank("a", 0));
    io.kvrouter.core.explain.Explanation explanation = io.kvrouter.core.explain.Decision
        .capture(io.kvrouter.core.explain.DecisionKind.SELECT, state.view(), preferringA, scratch, clock.millis())
        .explain("n");
    io.kvrouter.core.explain.Explanation.CandidateExplanation a = explanation.candidates().stream()
        .filter(c -> c.rank().workerId().equals("a")).findFirst().orElseThrow();
    assertThat(a.costTerms()).containsEntry("in_flight", 2.0);
    assertThat(a.costTerms().get("session_affinity")).isCloseTo(-1.0, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(a.costTerms().values().stream().mapToDouble(Double::doubleValue).sum())
        .isCloseTo(a.cost(), org.assertj.core.data.Offset.offset(1e-12));
    io.kvrouter.core.explain.Explanation.CandidateExplanation b = explanation.candidates().stream()
        .filter(c -> c.rank().workerId().equals("b")).findFirst().orElseThrow();
    assertThat(b.costTerms()).doesNotContainKey("session_affinity");
  }
}
