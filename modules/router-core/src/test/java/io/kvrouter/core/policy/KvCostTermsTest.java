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
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.CandidatesForTests;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Dynamo's newer kv cost terms, exactly: the overlap-credit decay, the decode active-request weight and the
 * shared-cache multiplier, each alone and together, and their explain terms adding up to the cost.
 */
class KvCostTermsTest {
  private static final int BLOCK = 16;

  /** Scoring of a request of {@code isl} tokens with Dynamo's other weights (credit 1, scale 1, host 0.75, disk 0.25). */
  private static Scoring scoring(int isl, double decay, double requestWeight, double shared) {
    return scoring(isl, decay, requestWeight, shared, 0);
  }

  private static Scoring scoring(int isl, double decay, double requestWeight, double shared, double loadBound) {
    return scoring(isl, decay, requestWeight, shared, loadBound, 1.0);
  }

  private static Scoring scoring(int isl, double decay, double requestWeight, double shared, double loadBound,
      double backlogWeight) {
    return new Scoring(isl, BLOCK, Scorers.requestBlocks(isl, BLOCK), 1.0, 1.0, 0.75, 0.25, decay, requestWeight,
        shared, loadBound, backlogWeight);
  }

  private static double[] costs(Candidates c, Scoring s) {
    Scorers.kv(c, s);
    double[] costs = new double[c.size()];
    for (int i = 0; i < c.size(); i++) {
      costs[i] = c.cost(i);
    }
    return costs;
  }

  @Test
  void theDecayDividesTheDeviceCreditByOnePlusDecayTimesTheBacklogAboveTheFloorInRequests() {
    // request 160 tokens = 10 blocks. a: 320 prefill tokens (20 blocks above the floor = 2 requests), 10 device
    // blocks; b: the floor (0 prefill), nothing cached; c: 160 tokens (1 request above), 10 device blocks
    Candidates c = CandidatesForTests.empty(3);
    CandidatesForTests.add(c, 0, 320, 0, 10, 0, 0, 0);
    CandidatesForTests.add(c, 0, 0, 0, 0, 0, 0, 0);
    CandidatesForTests.add(c, 0, 160, 0, 10, 0, 0, 0);
    // decay 1: a's credit 10 / (1 + 1·2) = 10/3; c's 10 / (1 + 1·1) = 5
    double[] decayed = costs(c, scoring(160, 1.0, 0, 0));
    assertThat(decayed[0]).isCloseTo((320 + 160) / 16.0 - 10 / 3.0 + 10, within(1e-12));
    assertThat(decayed[1]).isEqualTo(160 / 16.0 + 10);
    assertThat(decayed[2]).isCloseTo((160 + 160) / 16.0 - 5 + 10, within(1e-12));
    // decay 0.5 halves the backlog's weight: a 10 / (1 + 0.5·2) = 5
    assertThat(costs(c, scoring(160, 0.5, 0, 0))[0]).isCloseTo(30 - 5 + 10, within(1e-12));
    // decay 0 is Dynamo's default cost: the full credit everywhere
    double[] plain = costs(c, scoring(160, 0, 0, 0));
    assertThat(plain).containsExactly(30 - 10 + 10, 10 + 10, 20 - 10 + 10);
  }

  @Test
  void aRankAtTheFloorKeepsItsFullDeviceCreditWhateverTheDecay() {
    Candidates c = CandidatesForTests.empty(2);
    CandidatesForTests.add(c, 0, 48, 0, 4, 0, 0, 0);
    CandidatesForTests.add(c, 0, 48, 0, 0, 0, 0, 0);
    // both at the floor (48 tokens): no excess, so credit 4 stays whole
    assertThat(costs(c, scoring(64, 100.0, 0, 0))[0]).isEqualTo((48 + 64) / 16.0 - 4 + 4);
  }

  @Test
  void theDecayLeavesHostAndDiskCreditsAlone() {
    Candidates c = CandidatesForTests.empty(2);
    CandidatesForTests.add(c, 0, 160, 0, 2, 4, 4, 0);
    CandidatesForTests.add(c, 0, 0, 0, 0, 0, 0, 0);
    // 160 tokens above the floor = 1 request of 10 blocks: device credit 2 / (1 + 1) = 1; host 0.75·4, disk 0.25·4
    assertThat(costs(c, scoring(160, 1.0, 0, 0))[0])
        .isCloseTo((160 + 160) / 16.0 - (1 + 3 + 1) + 10, within(1e-12));
  }

  /** The floor is the least-loaded rank left after filtering: an idle rank the request may not use does not count. */
  @Test
  void theDecayFloorIsTheLeastLoadedEligibleRankNotAFilteredOne() {
    ManualClock clock = new ManualClock(1_000_000);
    AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    for (String w : new String[] {"idle", "x", "y"}) {
      state.register(worker(w));
    }
    state.setPolicy("kv", Map.of(PolicyConfig.OVERLAP_CREDIT_DECAY, "1"));
    // x carries 320 prefill tokens, y 160: bookings pinned to them (no hashes: nothing cached)
    assertThat(state.book(Requests.pinned(Requests.of("m", "bx", 320), "x", null), 1, 0))
        .isInstanceOf(BookOutcome.Booked.class);
    assertThat(state.book(Requests.pinned(Requests.of("m", "by", 160), "y", null), 2, 0))
        .isInstanceOf(BookOutcome.Booked.class);
    SelectionRequest request = Requests.allowed(Requests.of("m", "", 160), Set.of("x", "y"));
    Candidates scratch = new Candidates();
    Selector.select(state.view(), request, scratch, clock.millis());
    assertThat(scratch.size()).isEqualTo(2);
    assertThat(scratch.minPrefillTokens()).as("the floor over x and y, not the filtered idle rank").isEqualTo(160);
    // and the cost reads that floor: x is 160 tokens (1 request of 10 blocks) above it
    int x = scratch.rankIndex(0) == state.view().indexOf(new io.kvrouter.core.model.Rank("x", 0)) ? 0 : 1;
    assertThat(Scorers.creditDecay(scratch, x, Selector.scoring(state.view().policy(), request, BLOCK), 160))
        .isEqualTo(0.5);
  }

  @Test
  void theActiveRequestWeightAddsItsWeightPerActiveRequest() {
    Candidates c = CandidatesForTests.empty(2);
    CandidatesForTests.add(c, 4, 0, 30, 0, 0, 0, 0);
    CandidatesForTests.add(c, 0, 0, 30, 0, 0, 0, 0);
    double[] without = costs(c, scoring(64, 0, 0, 0));
    double[] with = costs(c, scoring(64, 0, 32, 0));
    assertThat(with[0] - without[0]).isEqualTo(4 * 32.0);
    assertThat(with[1]).isEqualTo(without[1]);
  }

  /**
   * Shared hits are the request's blocks the fleet holds (the longest any candidate holds on any tier) beyond each
   * rank's device prefix; a rank's host blocks there are credited at both weights, as Dynamo does.
   */
  @Test
  void theSharedCacheCreditsTheFleetsCachedBlocksBeyondEachRanksDevicePrefix() {
    Candidates c = CandidatesForTests.empty(3);
    CandidatesForTests.add(c, 0, 0, 0, 6, 0, 0, 0); // the deepest: 6 device blocks
    CandidatesForTests.add(c, 0, 0, 0, 2, 3, 0, 0); // 2 device, 3 host
    CandidatesForTests.add(c, 0, 0, 0, 0, 0, 0, 0); // nothing
    assertThat(c.cachedDepth()).isEqualTo(6);
    double[] costs = costs(c, scoring(128, 0, 0, 0.5));
    // 128 tokens = 8 blocks, 8 additional active blocks each
    assertThat(costs[0]).isEqualTo(8 - 6 + 8); // no shared blocks beyond its own device prefix
    assertThat(costs[1]).isEqualTo(8 - (2 + 0.75 * 3 + 0.5 * 4) + 8);
    assertThat(costs[2]).isEqualTo(8 - 0.5 * 6 + 8);
  }

  @Test
  void everyTermAppearsWhenItsWeightIsOnAndTheTermsAddUpToTheCost() {
    Candidates c = CandidatesForTests.empty(3);
    CandidatesForTests.add(c, 2, 320, 40, 8, 1, 0, 3);
    CandidatesForTests.add(c, 1, 0, 25, 0, 0, 2, 0);
    CandidatesForTests.add(c, 0, 1600, 10, 10, 0, 0, 10); // clamped: its credit exceeds nothing, prefill stays >= 0
    Scoring all = scoring(160, 2.0, 8, 0.5);
    Scorers.kv(c, all);
    for (int i = 0; i < c.size(); i++) {
      Map<String, Double> terms = Scorers.KV.terms(all, c, i);
      assertThat(terms).containsOnlyKeys("prefill", "credit_decay", "shared_credit", "decode", "active",
          "active_requests");
      assertThat(terms.values().stream().mapToDouble(Double::doubleValue).sum()).as("candidate %d", i)
          .isCloseTo(c.cost(i), within(1e-9));
      assertThat(terms.get("active_requests")).isEqualTo(8.0 * c.inFlight(i));
      assertThat(terms.get("credit_decay")).isGreaterThanOrEqualTo(0);
      assertThat(terms.get("shared_credit")).isLessThanOrEqualTo(0);
    }
    // candidate 0: 20 blocks above the floor over 10 request blocks: decay 1/(1 + 2·2) = 0.2
    Map<String, Double> first = Scorers.KV.terms(all, c, 0);
    assertThat(first.get("prefill")).isCloseTo((320 + 160) / 16.0 - (8 + 0.75), within(1e-12));
    assertThat(first.get("credit_decay")).isCloseTo(8 * (1 - 0.2), within(1e-12));
    // the fleet's depth is 10 (candidate 2), 2 blocks beyond candidate 0's device prefix, at 0.5
    assertThat(first.get("shared_credit")).isCloseTo(-0.5 * 2, within(1e-12));
    // weights at 0: only the three original terms
    assertThat(Scorers.KV.terms(scoring(160, 0, 0, 0), c, 0)).containsOnlyKeys("prefill", "decode", "active");
  }

  /**
   * A decision over more candidates than a record keeps still explains every kept candidate with the floor and the
   * depth of all of them: the least-loaded rank is expensive (so not kept) and its floor still shapes the terms.
   */
  @Test
  void explainedTermsUseTheFloorAndDepthOfEveryCandidateEvenBeyondTheRecordedOnes() {
    ManualClock clock = new ManualClock(1_000_000);
    AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    int workers = Decision.MAX_RANKS + 6;
    for (int w = 0; w < workers; w++) {
      state.register(worker(String.format("w%03d", w)));
    }
    state.setPolicy("kv", Map.of(PolicyConfig.OVERLAP_CREDIT_DECAY, "1", PolicyConfig.SHARED_CACHE_MULTIPLIER,
        "0.5"));
    // every worker but w000 carries one 320-token booking; w000 carries an idle decode load far above the others
    for (int w = 1; w < workers; w++) {
      state.book(Requests.pinned(Requests.of("m", "b" + w, 320), String.format("w%03d", w), null), w, 0);
    }
    for (int k = 0; k < 40; k++) {
      BookOutcome.Booked big = (BookOutcome.Booked) state.book(
          Requests.pinned(Requests.of("m", "big" + k, 8192), "w000", null), 1000 + k, 0);
      state.markPrefillDone("big" + k, big.answer().attempt()); // decode blocks stay, prefill tokens go
    }
    SelectionRequest request = Requests.of("m", "", 160);
    Candidates scratch = new Candidates();
    Selector.select(state.view(), request, scratch, clock.millis());
    Explanation e = Decision.capture(DecisionKind.SELECT, state.view(), request, scratch, clock.millis())
        .explain("n");
    assertThat(e.candidatesTotal()).isEqualTo(workers);
    assertThat(e.candidates()).hasSize(Decision.MAX_RANKS);
    assertThat(e.candidates()).extracting(k -> k.rank().workerId()).doesNotContain("w000");
    assertThat(scratch.minPrefillTokens()).as("w000 is the floor").isZero();
    for (Explanation.CandidateExplanation k : e.candidates()) {
      assertThat(k.costTerms().values().stream().mapToDouble(Double::doubleValue).sum()).as("%s", k.rank())
          .isCloseTo(k.cost(), within(1e-9));
    }
  }

  @Test
  void theLoadBoundIsTheCeilingOfTheFactorTimesTheMeanInFlightWithThisRequest() {
    Candidates c = CandidatesForTests.empty(3);
    CandidatesForTests.add(c, 4, 0, 0, 0, 0, 0, 0);
    CandidatesForTests.add(c, 0, 0, 0, 0, 0, 0, 0);
    CandidatesForTests.add(c, 1, 0, 0, 0, 0, 0, 0);
    // ceil(1.25·(5 + 1)/3) = ceil(2.5) = 3; ceil(1.0·6/3) = 2; off: no bound
    assertThat(Scorers.loadBound(c, scoring(16, 0, 0, 0, 1.25))).isEqualTo(3);
    assertThat(Scorers.loadBound(c, scoring(16, 0, 0, 0, 1.0))).isEqualTo(2);
    assertThat(Scorers.loadBound(c, scoring(16, 0, 0, 0, 0))).isEqualTo(Long.MAX_VALUE);
  }

  /**
   * Over the bound, a rank loses its cache credit when what it would reuse is shared state: hot there (its live
   * bookings hold every device block the request would reuse) or held as deep by another candidate; it keeps the
   * credit for state only it holds and nobody live uses.
   */
  @Test
  void overTheBoundSharedStateLosesItsCreditAndPrivateStateKeepsIt() {
    Candidates c = CandidatesForTests.empty(6);
    CandidatesForTests.add(c, 6, 32, 0, 8, 0, 0, 8); // hot: its 8 device blocks all held by live bookings
    CandidatesForTests.add(c, 6, 32, 0, 9, 0, 0, 3); // private: the only one 9 deep, live bookings hold 3
    CandidatesForTests.add(c, 6, 32, 0, 5, 0, 0, 0); // replicated: others hold deeper prefixes
    CandidatesForTests.add(c, 0, 0, 0, 0, 0, 0, 0);
    CandidatesForTests.add(c, 0, 0, 0, 0, 0, 0, 0);
    // bound ceil(1.25·(18 + 1)/5) = 5: the first three (6 + 1 > 5) are over it; 160 tokens = 10 blocks
    Scoring bounded = scoring(160, 0, 0, 0, 1.25);
    double[] costs = costs(c, bounded);
    assertThat(costs[0]).isEqualTo((32 + 160) / 16.0 + (10 - 8));
    assertThat(costs[1]).isEqualTo((32 + 160) / 16.0 - 9 + (10 - 3));
    assertThat(costs[2]).isEqualTo((32 + 160) / 16.0 + 10);
    assertThat(costs[3]).isEqualTo(160 / 16.0 + 10);
    Map<String, Double> terms = Scorers.KV.terms(bounded, c, 0);
    assertThat(terms.get("load_bound")).as("the credit the bound took").isEqualTo(8.0);
    assertThat(Scorers.KV.terms(bounded, c, 1).get("load_bound")).isZero();
    assertThat(Scorers.KV.terms(bounded, c, 2).get("load_bound")).isEqualTo(5.0);
    assertThat(terms.values().stream().mapToDouble(Double::doubleValue).sum()).isEqualTo(costs[0]);
    // without the bound all keep their credit
    assertThat(costs(c, scoring(160, 0, 0, 0, 0))[0]).isEqualTo((32 + 160) / 16.0 - 8 + 2);
    // a second candidate as deep makes the 9-deep prefix replicated: it loses its credit too (bound now
    // ceil(1.25·19/6) = 4)
    CandidatesForTests.add(c, 0, 0, 0, 9, 0, 0, 0);
    assertThat(costs(c, bounded)[1]).isEqualTo((32 + 160) / 16.0 + (10 - 3));
  }

  /** Under the bound nothing changes, hot or not. */
  @Test
  void underTheBoundEveryRankKeepsItsCredit() {
    Candidates c = CandidatesForTests.empty(2);
    CandidatesForTests.add(c, 1, 0, 0, 8, 0, 0, 8);
    CandidatesForTests.add(c, 1, 0, 0, 8, 0, 0, 0);
    // bound ceil(1.25·3/2) = 2: 1 + 1 is within it
    assertThat(costs(c, scoring(160, 0, 0, 0, 1.25))).containsExactly(10 - 8 + 2, 10 - 8 + 10);
  }

  @Test
  void theBacklogWeightScalesTheQueuedPrefillTokensAgainstTheRequestsOwn() {
    Candidates c = CandidatesForTests.empty(2);
    CandidatesForTests.add(c, 0, 640, 0, 4, 0, 0, 0);
    CandidatesForTests.add(c, 0, 0, 0, 0, 0, 0, 0);
    // weight 0.25: 640 queued tokens count as 160, i.e. 10 blocks: max(10 + 10 − 4, 0) + 10 additional blocks
    assertThat(costs(c, scoring(160, 0, 0, 0, 0, 0.25))[0]).isEqualTo(10 + 10 - 4 + 10);
    // weight 1 is Dynamo's: all 40 blocks of backlog
    assertThat(costs(c, scoring(160, 0, 0, 0, 0, 1.0))[0]).isEqualTo(40 + 10 - 4 + 10);
    // the decay still measures the whole backlog: 40 blocks above the floor over 10 request blocks, decay 1 → 1/5
    assertThat(costs(c, scoring(160, 1.0, 0, 0, 0, 0.25))[0]).isCloseTo(10 + 10 - 4 / 5.0 + 10, within(1e-12));
  }
}
