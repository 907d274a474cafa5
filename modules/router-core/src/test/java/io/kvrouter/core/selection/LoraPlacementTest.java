package io.kvrouter.core.selection;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import io.kvrouter.core.testkit.Selections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LoraPlacementTest {
  private final ManualClock clock = new ManualClock(1_000_000);

  private AdmissionState fleet(WorkerConfig... workers) {
    AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    for (WorkerConfig w : workers) {
      state.register(w);
    }
    return state;
  }

  private static SelectionRequest lora(String requestId, String adapter) {
    return Requests.of("m", requestId, 64).withLoraName(adapter);
  }

  @Test
  void aRequestGoesOnlyToWorkersThatHaveItsAdapterLoaded() {
    AdmissionState state = fleet(worker("a"), worker("b").withLoraAdapters(Set.of("sql")),
        worker("c").withLoraAdapters(Set.of("sql", "chat")), worker("d"));
    Set<String> chosen = new HashSet<>();
    for (int i = 0; i < 40; i++) {
      BookOutcome outcome = state.book(lora("r" + i, "sql"), i, 0);
      chosen.add(((BookOutcome.Booked) outcome).answer().selection().rank().workerId());
    }
    // the load spreads over both loaded workers, never to the others
    assertThat(chosen).containsExactlyInAnyOrder("b", "c");
  }

  @Test
  void theFilterRecordsWhyTheOtherRanksWereLeftOut() {
    AdmissionState state = fleet(worker("a"), worker("b").withLoraAdapters(Set.of("sql")));
    Candidates scratch = new Candidates();
    Selector.select(state.view(), lora("r", "sql"), scratch, clock.millis());
    assertThat(scratch.size()).isEqualTo(1);
    assertThat(state.view().rank(scratch.rankIndex(0)).workerId()).isEqualTo("b");
    assertThat(scratch.filteredCount()).isEqualTo(1);
    assertThat(scratch.filteredReason(0)).isEqualTo(FilterReason.LORA_NOT_LOADED);
  }

  @Test
  void aColdAdapterGoesToOneWorkerChosenByRendezvousHash() {
    AdmissionState state = fleet(worker("a"), worker("b", 2), worker("c"), worker("d"));
    Map<String, Set<String>> placed = new HashMap<>();
    for (String adapter : List.of("x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8")) {
      for (int i = 0; i < 10; i++) {
        // load accumulating on the placed worker must not move the adapter's first requests elsewhere
        BookOutcome outcome = state.book(lora(adapter + "-" + i, adapter), i, 0);
        placed.computeIfAbsent(adapter, k -> new HashSet<>())
            .add(((BookOutcome.Booked) outcome).answer().selection().rank().workerId());
      }
    }
    for (Map.Entry<String, Set<String>> e : placed.entrySet()) {
      assertThat(e.getValue()).as(e.getKey()).hasSize(1);
      String expected = null;
      long best = 0;
      for (String w : List.of("a", "b", "c", "d")) {
        long weight = LoraPlacement.rendezvousWeight(e.getKey(), w);
        if (expected == null || Long.compareUnsigned(weight, best) > 0) {
          expected = w;
          best = weight;
        }
      }
      assertThat(e.getValue()).as(e.getKey()).containsExactly(expected);
    }
    // eight adapters do not all land on one worker: the hash spreads them
    Set<String> used = new HashSet<>();
    placed.values().forEach(used::addAll);
    assertThat(used.size()).isGreaterThan(1);
  }

  @Test
  void aColdAdapterPlacementMovesOnlyTheAdaptersOfAWorkerThatLeaves() {
    AdmissionState state = fleet(worker("a"), worker("b"), worker("c"), worker("d"));
    Map<String, String> before = new HashMap<>();
    for (int i = 0; i < 32; i++) {
      String adapter = "ad" + i;
      before.put(adapter, Selections.select(state, clock, lora("p" + i, adapter)).rank().workerId());
    }
    state.deregister("c");
    for (Map.Entry<String, String> e : before.entrySet()) {
      String after = Selections.select(state, clock, lora("q", e.getKey())).rank().workerId();
      if (!e.getValue().equals("c")) {
        assertThat(after).as(e.getKey()).isEqualTo(e.getValue());
      } else {
        assertThat(after).isNotEqualTo("c");
      }
    }
  }

  @Test
  void aPinnedRequestKeepsItsPinAndTheBaseModelIsNotNarrowed() {
    AdmissionState state = fleet(worker("a"), worker("b").withLoraAdapters(Set.of("sql")));
    SelectionRequest pinned = Requests.pinned(lora("r", "sql"), "a", null).withLoraName("sql");
    assertThat(Selections.select(state, clock, pinned).rank().workerId()).isEqualTo("a");
    Candidates scratch = new Candidates();
    Selector.select(state.view(), Requests.of("m", "r", 64), scratch, clock.millis());
    assertThat(scratch.size()).isEqualTo(2);
  }

  @Test
  void anAdapterAnEngineReportsServingCountsAsLoadedUntilItsNextReportDropsIt() {
    AdmissionState state = fleet(worker("a"), worker("b"), worker("c"));
    state.reportLoad("c", List.of(new io.kvrouter.core.membership.RankReport(0, 0, 0, 0, Set.of("chat"))));
    for (int i = 0; i < 10; i++) {
      assertThat(Selections.select(state, clock, lora("r" + i, "chat")).rank().workerId()).isEqualTo("c");
    }
    state.reportLoad("c", List.of(new io.kvrouter.core.membership.RankReport(0, 0, 0, 0)));
    String cold = Selections.select(state, clock, lora("cold", "chat")).rank().workerId();
    Candidates scratch = new Candidates();
    Selector.select(state.view(), lora("cold", "chat"), scratch, clock.millis());
    assertThat(scratch.filteredReason(0)).isEqualTo(FilterReason.LORA_COLD_PLACEMENT);
    assertThat(cold).isEqualTo(LoraPlacement.coldWorker(state.view(), "chat", allOf(state)));
  }

  @Test
  void aReportWithBadAdapterNamesIsRefusedAndChangesNothing() {
    AdmissionState state = fleet(worker("a"));
    var before = state.snapshot().workers().get(0).ranks().get(0).reported();
    for (Set<String> bad : List.of(Set.of(""), Set.of("x".repeat(257)))) {
      try {
        state.reportLoad("a", List.of(new io.kvrouter.core.membership.RankReport(0, 1, 1, 1, bad)));
        throw new AssertionError("accepted " + bad);
      } catch (io.kvrouter.core.error.RoutingException e) {
        assertThat(e.error().code()).isEqualTo(io.kvrouter.core.error.RoutingError.Code.INVALID_ARGUMENT);
      }
    }
    assertThat(state.snapshot().workers().get(0).ranks().get(0).reported()).isEqualTo(before);
  }

  private Candidates allOf(AdmissionState state) {
    Candidates all = new Candidates();
    LoadProjection.projectWorkerLoads(state.view(), Requests.of("m", "r", 64), all, clock.millis());
    return all;
  }

  @Test
  void rendezvousWeightsAreStable() {
    // fixed values: every node and every release must place a cold adapter on the same worker
    assertThat(LoraPlacement.rendezvousWeight("sql", "w1")).isEqualTo(8963548891845641033L);
    assertThat(LoraPlacement.rendezvousWeight("sql", "w2")).isEqualTo(8545284562562091471L);
    assertThat(LoraPlacement.rendezvousWeight("ab", "c")).isNotEqualTo(LoraPlacement.rendezvousWeight("a", "bc"));
  }
}
