package io.kvrouter.core.explain;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Filters, cost terms and margins of explained decisions over crafted views. */
class DecisionTest {
  private final ManualClock clock = new ManualClock(1_000_000);
  private final AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);

  DecisionTest() {
    state.register(worker("a"));
    state.register(worker("b", 2));
  }

  private Explanation explain(SelectionRequest request) {
    Candidates scratch = new Candidates();
    SelectionResult result = Selector.select(state.view(), request, scratch, clock.millis());
    Explanation e = Decision.capture(DecisionKind.SELECT, state.view(), request, scratch, clock.millis())
        .explain("node-1");
    assertThat(e.picked()).isEqualTo(result.rank());
    assertThat(e.pickedCost()).isEqualTo(result.cost());
    return e;
  }

  private static Map<Rank, String> reasons(Explanation e) {
    return e.filtered().stream().collect(java.util.stream.Collectors.toMap(Explanation.FilteredRank::rank,
        Explanation.FilteredRank::reason));
  }

  @Test
  void aPinnedWorkerFiltersTheOthersAsPinned() {
    Explanation e = explain(Requests.pinned(Requests.of("m", "r", 16), "b", 1));
    assertThat(e.picked()).isEqualTo(new Rank("b", 1));
    assertThat(reasons(e)).containsExactlyInAnyOrderEntriesOf(
        Map.of(new Rank("a", 0), "PINNED", new Rank("b", 0), "PINNED"));
    assertThat(e.candidates()).extracting(Explanation.CandidateExplanation::rank).containsExactly(new Rank("b", 1));
    assertThat(e.hasRunnerUp()).isFalse();
    assertThat(e.margin()).isZero();
    assertThat(e.node()).isEqualTo("node-1");
    assertThat(e.kind()).isEqualTo("select");
    assertThat(e.requestId()).isEqualTo("r");
  }

  @Test
  void theAllowedSetFiltersOthersAsNotAllowed() {
    Explanation e = explain(Requests.allowed(Requests.of("m", "", 16), Set.of("b")));
    assertThat(reasons(e)).containsExactlyEntriesOf(Map.of(new Rank("a", 0), "NOT_ALLOWED"));
    assertThat(e.candidates()).hasSize(2);
    assertThat(e.filteredTotal()).isEqualTo(1);
  }

  @Test
  void anOverloadedRankIsFilteredAsOverloaded() {
    state.setPolicy("least_in_flight", Map.of("active_decode_blocks_threshold", "0.5"));
    state.reportLoad("a", List.of(new RankReport(0, 600, 0, 0)));
    Explanation e = explain(Requests.of("m", "", 16));
    assertThat(reasons(e)).containsExactlyEntriesOf(Map.of(new Rank("a", 0), "OVERLOADED"));
  }

  @Test
  void aSilentRankIsFilteredAsUnavailableAsOfTheDecision() {
    state.reportLoad("a", List.of(new RankReport(0, 0, 0, 0)));
    clock.advance(Duration.ofSeconds(11));
    Candidates scratch = new Candidates();
    SelectionRequest request = Requests.of("m", "", 16);
    Selector.select(state.view(), request, scratch, clock.millis());
    Decision decision = Decision.capture(DecisionKind.SELECT, state.view(), request, scratch, clock.millis());
    // a report after the decision changes nothing in what the decision says
    state.reportLoad("a", List.of(new RankReport(0, 0, 0, 0)));
    assertThat(reasons(decision.explain("n"))).containsExactlyEntriesOf(Map.of(new Rank("a", 0), "UNAVAILABLE"));
  }

  @Test
  void kvTermsAddUpToTheCostAndTheMarginIsRunnerUpMinusPick() {
    state.setPolicy("kv", Map.of("preset", "dynamo"));
    long[] hashes = {11, 12, 13};
    SelectionRequest first = new SelectionRequest("m", "r1", hashes, 48, 0, "a", null, null, 0, null, null, null);
    assertThat(state.book(first, 1, 0)).isInstanceOf(BookOutcome.Booked.class);
    Explanation e = explain(new SelectionRequest("m", "", hashes, 80, 0, null, null, null, 0, null, null, 1.5));
    assertThat(e.policy()).isEqualTo("kv");
    assertThat(e.requestBlocks()).isEqualTo(5);
    assertThat(e.candidates()).hasSize(3);
    for (Explanation.CandidateExplanation c : e.candidates()) {
      assertThat(c.costTerms()).containsOnlyKeys("prefill", "decode", "active");
      assertThat(c.costTerms().values().stream().mapToDouble(Double::doubleValue).sum())
          .as("terms of %s", c.rank()).isCloseTo(c.cost(), within(1e-9));
    }
    Explanation.CandidateExplanation a = e.candidates().stream().filter(c -> c.rank().workerId().equals("a"))
        .findFirst().orElseThrow();
    assertThat(a.inFlight()).isEqualTo(1);
    assertThat(a.decodeBlocks()).isEqualTo(3);
    assertThat(a.activeMatched()).isEqualTo(3);
    assertThat(a.costTerms()).containsEntry("decode", 3.0).containsEntry("active", 2.0)
        .containsEntry("prefill", 1.5 * (48 + 80) / 16.0);
    double cheapestOther = e.candidates().stream().filter(c -> !c.picked())
        .mapToDouble(Explanation.CandidateExplanation::cost).min().orElseThrow();
    assertThat(e.hasRunnerUp()).isTrue();
    assertThat(e.runnerUpCost()).isEqualTo(cheapestOther);
    assertThat(e.margin()).isEqualTo(cheapestOther - e.pickedCost()).isGreaterThanOrEqualTo(0);
  }

  @Test
  void leastInFlightExplainsItsCostAsInFlight() {
    state.setPolicy("least_in_flight", Map.of());
    state.book(Requests.pinned(Requests.of("m", "r1", 16), "a", null), 1, 0);
    Explanation e = explain(Requests.of("m", "", 16));
    assertThat(e.candidates()).allSatisfy(c -> assertThat(c.costTerms()).containsExactlyEntriesOf(
        Map.of("in_flight", (double) c.inFlight())));
    assertThat(e.picked().workerId()).isEqualTo("b");
    assertThat(e.margin()).isEqualTo(0.0); // b's two idle ranks tie
  }

  @Test
  void booksAreRecordedByTheAdmissionState() {
    DecisionLog log = new DecisionLog(8);
    state.recordDecisionsTo(log);
    state.book(Requests.of("m", "book-1", 16), 1, 0);
    state.book(Requests.of("m", "book-2", 16), 2, 0);
    assertThat(log.newest(0)).extracting(d -> d.explain("n").requestId()).containsExactly("book-2", "book-1");
    assertThat(log.newest(1).get(0).kind()).isEqualTo(DecisionKind.BOOK);
    assertThat(log.newest(1).get(0).explain("n").kind()).isEqualTo("book");
  }

  @Test
  void aLargeSelectionKeepsThePickAndTheCheapestOthers() {
    state.register(worker("big", 100));
    state.setPolicy("least_in_flight", Map.of());
    state.book(Requests.pinned(Requests.of("m", "r1", 16), "a", null), 1, 0);
    Explanation e = explain(Requests.of("m", "", 16));
    assertThat(e.candidatesTotal()).isEqualTo(103);
    assertThat(e.candidates()).hasSize(Decision.MAX_RANKS);
    assertThat(e.candidates()).filteredOn(Explanation.CandidateExplanation::picked).hasSize(1);
    // rank a/0 (one in flight) is the most expensive: dropped
    assertThat(e.candidates()).extracting(Explanation.CandidateExplanation::rank).doesNotContain(new Rank("a", 0));
  }
}
