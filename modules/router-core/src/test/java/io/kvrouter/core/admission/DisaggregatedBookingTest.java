package io.kvrouter.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.Disaggregation;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionRequests;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SessionAffinity;
import io.kvrouter.core.testkit.LedgerInvariants;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DisaggregatedBookingTest {
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);

  private static WorkerConfig worker(String id, WorkerRole role) {
    return new WorkerConfig(id, 0, 1, 8192, 1000, 16, "http://" + id, "local", role);
  }

  private AdmissionState state(WorkerConfig... workers) {
    AdmissionState state = new AdmissionState("m", new AdmissionSettings(Duration.ofSeconds(300),
        Duration.ofSeconds(10)), clock);
    for (WorkerConfig w : workers) {
      state.register(w);
    }
    return state;
  }

  private AdmissionState pd() {
    return state(worker("p1", WorkerRole.PREFILL), worker("p2", WorkerRole.PREFILL),
        worker("d1", WorkerRole.DECODE), worker("d2", WorkerRole.DECODE));
  }

  private static SelectionRequest request(String id, int isl, Disaggregation mode) {
    return Requests.of("m", id, isl).withDisaggregation(mode);
  }

  private static BookingAnswer booked(BookOutcome outcome) {
    assertThat(outcome).isInstanceOf(BookOutcome.Booked.class);
    return ((BookOutcome.Booked) outcome).answer();
  }

  private static RoutingError rejected(BookOutcome outcome) {
    assertThat(outcome).isInstanceOf(BookOutcome.Rejected.class);
    return ((BookOutcome.Rejected) outcome).error();
  }

  private static RankLoad load(AdmissionState state, Rank rank) {
    return state.view().cell(state.view().indexOf(rank)).booked();
  }

  @Test
  void aPairIsBookedTogetherWithPrefillOnThePrefillRankAndBlocksOnTheDecodeRank() {
    AdmissionState state = pd();
    BookingAnswer answer = booked(state.book(request("r", 100, Disaggregation.AUTO), 1, 0));
    SelectionResult selection = answer.selection();
    assertThat(selection.disaggregated()).isTrue();
    assertThat(selection.rank().workerId()).startsWith("p");
    assertThat(selection.decode().rank().workerId()).startsWith("d");
    assertThat(load(state, selection.rank())).extracting(RankLoad::inFlight, RankLoad::prefillTokens,
        RankLoad::decodeBlocks).containsExactly(1, 100L, 0L);
    assertThat(load(state, selection.decode().rank())).extracting(RankLoad::inFlight, RankLoad::prefillTokens,
        RankLoad::decodeBlocks).containsExactly(1, 0L, 7L);
    assertThat(selection.decode().load()).isEqualTo(load(state, selection.decode().rank()));
    assertThat(answer.decodeLoadUpdate().rank()).isEqualTo(selection.decode().rank());
    ModelSnapshot.BookingSnapshot snapshot = state.snapshot().bookings().get(0);
    assertThat(snapshot.decodeRank()).isEqualTo(selection.decode().rank());
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  @Test
  void prefillDoneFreesThePrefillRankAndReleaseFreesTheDecodeRank() {
    AdmissionState state = pd();
    BookingAnswer answer = booked(state.book(request("r", 100, Disaggregation.AUTO), 1, 0));
    Rank prefill = answer.selection().rank();
    Rank decode = answer.selection().decode().rank();
    MutationResult done = state.markPrefillDone("r", answer.attempt());
    assertThat(done.applied()).isTrue();
    assertThat(load(state, prefill).inFlight()).isZero();
    assertThat(load(state, prefill).prefillTokens()).isZero();
    assertThat(load(state, decode).inFlight()).isEqualTo(1);
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
    assertThat(state.markPrefillDone("r", answer.attempt()).applied()).as("second call").isFalse();
    MutationResult released = state.release("r", answer.attempt());
    assertThat(released.applied()).isTrue();
    assertThat(released.decodeLoad().rank()).isEqualTo(decode);
    assertThat(load(state, decode)).extracting(RankLoad::inFlight, RankLoad::decodeBlocks).containsExactly(0, 0L);
    assertThat(load(state, prefill).inFlight()).as("prefill not freed twice").isZero();
    assertThat(state.snapshot().bookings()).isEmpty();
  }

  @Test
  void aReleaseBeforePrefillDoneFreesBothRanksAndRenewCoversBoth() {
    AdmissionState state = pd();
    BookingAnswer answer = booked(state.book(request("r", 100, Disaggregation.DISAGGREGATED), 1, 0));
    clock.advance(Duration.ofSeconds(200));
    assertThat(state.renew("r", answer.attempt()).applied()).isTrue();
    clock.advance(Duration.ofSeconds(200));
    assertThat(state.expire()).as("renewed: the one lease covers the pair").isZero();
    MutationResult released = state.release("r", answer.attempt());
    assertThat(released.load().load().inFlight()).isZero();
    assertThat(released.decodeLoad().load().inFlight()).isZero();
    for (int i = 0; i < state.view().rankCount(); i++) {
      assertThat(state.view().cell(i).booked().inFlight()).isZero();
    }
  }

  @Test
  void anExpiredOrCancelledPairFreesBothRanks() {
    AdmissionState state = pd();
    booked(state.book(request("r1", 100, Disaggregation.AUTO), 1, 0));
    booked(state.book(request("r2", 100, Disaggregation.AUTO), 2, 0));
    assertThat(state.cancelBook("r2", 2)).isTrue();
    clock.advance(Duration.ofSeconds(301));
    assertThat(state.expire()).isEqualTo(1);
    for (int i = 0; i < state.view().rankCount(); i++) {
      assertThat(state.view().cell(i).booked()).extracting(RankLoad::inFlight, RankLoad::prefillTokens,
          RankLoad::decodeBlocks).containsExactly(0, 0L, 0L);
    }
  }

  @Test
  void theDecodeHalfIsChosenOnLoadWithoutOverlapCredit() {
    AdmissionState state = pd();
    // d1 carries one pair's blocks: the next decode half goes to d2, whatever the prefill half
    BookingAnswer first = booked(state.book(request("r1", 160, Disaggregation.AUTO), 1, 0));
    BookingAnswer second = booked(state.book(request("r2", 160, Disaggregation.AUTO), 2, 0));
    assertThat(second.selection().decode().rank()).isNotEqualTo(first.selection().decode().rank());
    assertThat(second.selection().rank()).isNotEqualTo(first.selection().rank());
    // the decode half's cost is its blocks only: no prefill term
    assertThat(second.selection().decode().cost()).isLessThan(second.selection().cost());
  }

  @Test
  void removingAWorkerDropsThePairsWithAHalfOnIt() {
    AdmissionState state = pd();
    BookingAnswer answer = booked(state.book(request("r", 100, Disaggregation.AUTO), 1, 0));
    Rank prefill = answer.selection().rank();
    assertThat(state.deregister(answer.selection().decode().rank().workerId())).isEqualTo(1);
    assertThat(load(state, prefill).inFlight()).isZero();
    assertThat(state.snapshot().bookings()).isEmpty();
  }

  @Test
  void conditionalDisaggregationBooksTheDecodeRankAloneForAShortUncachedPrompt() {
    AdmissionState state = pd();
    state.setPolicy("", Map.of("conditional_disagg_isl_threshold", "256"));
    BookingAnswer shortPrompt = booked(state.book(request("short", 200, Disaggregation.AUTO), 1, 0));
    assertThat(shortPrompt.selection().disaggregated()).isFalse();
    assertThat(shortPrompt.selection().rank().workerId()).startsWith("d");
    // the decode rank does its own prefill: it is charged the prompt
    assertThat(load(state, shortPrompt.selection().rank()).prefillTokens()).isEqualTo(200);
    BookingAnswer longPrompt = booked(state.book(request("long", 300, Disaggregation.AUTO), 2, 0));
    assertThat(longPrompt.selection().disaggregated()).isTrue();
    // DISAGGREGATED asks for a pair whatever the threshold
    assertThat(booked(state.book(request("forced", 200, Disaggregation.DISAGGREGATED), 3, 0)).selection()
        .disaggregated()).isTrue();
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  @Test
  void dynamosRatioThresholdKeepsAColdShortPromptDisaggregated() {
    AdmissionState state = pd();
    // Dynamo's isl_bounding: bypass only if eff_isl < 2048 and eff_isl / prompt < 0.7; a cold prompt's ratio is 1
    state.setPolicy("", Map.of("conditional_disagg_isl_threshold", "2048",
        "conditional_disagg_ratio_threshold", "0.7"));
    assertThat(booked(state.book(request("cold", 200, Disaggregation.AUTO), 1, 0)).selection().disaggregated())
        .isTrue();
  }

  @Test
  void badThresholdsAreRefusedAndChangeNothing() {
    AdmissionState state = pd();
    long version = state.view().version();
    for (Map<String, String> bad : java.util.List.of(Map.of("conditional_disagg_isl_threshold", "-1"),
        Map.of("conditional_disagg_isl_threshold", "x"), Map.of("conditional_disagg_ratio_threshold", "0"),
        Map.of("conditional_disagg_ratio_threshold", "1.5"))) {
      try {
        state.setPolicy("", bad);
        throw new AssertionError("accepted " + bad);
      } catch (io.kvrouter.core.error.RoutingException e) {
        assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_POLICY_PARAMETER);
      }
    }
    assertThat(state.view().version()).isEqualTo(version);
    assertThat(state.view().policy().disaggregation().islThreshold()).isZero();
  }

  /** One prefill worker (so the pair's prefill rank is known) and one decode worker, 8192 batched tokens each. */
  private AdmissionState onePair() {
    return state(worker("p1", WorkerRole.PREFILL), worker("d1", WorkerRole.DECODE));
  }

  @Test
  void prefillLoadSkipsThePrefillRankOnlyOnceItIsAboveTheThreshold() {
    AdmissionState state = onePair();
    state.setPolicy("", Map.of("conditional_disagg_policy", "prefill_load",
        "conditional_disagg_prefill_busy_threshold", "0.5"));
    assertThat(booked(state.book(request("idle", 100, Disaggregation.AUTO), 1, 0)).selection().disaggregated())
        .as("an idle prefill rank takes the pair").isTrue();
    state.release("idle", state.snapshot().bookings().get(0).attempt());
    // 4096 prefill tokens = 0.5 · 8192: at the threshold, not above it
    booked(state.book(request("fill", 4096, Disaggregation.DISAGGREGATED), 2, 0));
    assertThat(booked(state.book(request("at", 16, Disaggregation.AUTO), 3, 0)).selection().disaggregated())
        .as("at the threshold").isTrue();
    // the pair "at" added 16 more: above it now, so the next AUTO Book books the decode rank alone
    BookingAnswer above = booked(state.book(request("above", 16, Disaggregation.AUTO), 4, 0));
    assertThat(above.selection().disaggregated()).isFalse();
    assertThat(above.selection().rank().workerId()).isEqualTo("d1");
    assertThat(load(state, above.selection().rank()).prefillTokens()).as("charged its prefill").isEqualTo(16);
    // a long prompt skips as well: this rule ignores the prompt's length
    assertThat(booked(state.book(request("long", 100_000, Disaggregation.AUTO), 5, 0)).selection()
        .disaggregated()).isFalse();
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  @Test
  void prefillLoadFallsBackToTheQueueThresholdAndNeedsOneOfThem() {
    AdmissionState state = onePair();
    long version = state.view().version();
    try {
      state.setPolicy("", Map.of("conditional_disagg_policy", "prefill_load"));
      throw new AssertionError("accepted prefill_load without a threshold");
    } catch (io.kvrouter.core.error.RoutingException e) {
      assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_POLICY_PARAMETER);
      assertThat(e.error().message()).contains("conditional_disagg_prefill_busy_threshold")
          .contains("queue_threshold_frac");
    }
    assertThat(state.view().version()).as("nothing changed").isEqualTo(version);
    state.setPolicy("", Map.of("conditional_disagg_policy", "isl_or_load", "queue_threshold_frac", "0.25"));
    assertThat(state.view().policy().disaggregation().effectivePrefillBusyThreshold()).isEqualTo(0.25);
    state.setPolicy("", Map.of("conditional_disagg_prefill_busy_threshold", "0.75"));
    assertThat(state.view().policy().disaggregation().effectivePrefillBusyThreshold()).as("its own wins")
        .isEqualTo(0.75);
    state.setPolicy("", Map.of("conditional_disagg_prefill_busy_threshold", ""));
    long before = state.view().version();
    try {
      state.setPolicy("", Map.of("queue_threshold_frac", ""));
      throw new AssertionError("accepted clearing the only prefill-busy threshold");
    } catch (io.kvrouter.core.error.RoutingException e) {
      assertThat(e.error().reason()).isEqualTo(RoutingError.INVALID_POLICY_PARAMETER);
    }
    assertThat(state.view().version()).isEqualTo(before);
    assertThat(state.view().policy().disaggregation().effectivePrefillBusyThreshold()).isEqualTo(0.25);
  }

  @Test
  void islOrLoadSkipsForAShortPromptOrABusyPrefillRank() {
    AdmissionState state = onePair();
    state.setPolicy("", Map.of("conditional_disagg_policy", "isl_or_load",
        "conditional_disagg_isl_threshold", "256", "conditional_disagg_prefill_busy_threshold", "0.5"));
    assertThat(booked(state.book(request("short", 255, Disaggregation.AUTO), 1, 0)).selection().disaggregated())
        .as("the prompt arm, prefill idle").isFalse();
    assertThat(booked(state.book(request("edge", 256, Disaggregation.AUTO), 2, 0)).selection().disaggregated())
        .as("eff_isl at the threshold is not below it").isTrue();
    booked(state.book(request("fill", 4096, Disaggregation.DISAGGREGATED), 3, 0));
    assertThat(booked(state.book(request("long", 1000, Disaggregation.AUTO), 4, 0)).selection().disaggregated())
        .as("the load arm: 256 + 4096 prefill tokens on p1").isFalse();
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  @Test
  void theDecodeBusyGuardKeepsThePairWhenTheDecodeRankWouldFillPastItsFraction() {
    AdmissionState state = onePair();
    // the decode rank has 1000 KV blocks; the guard at 0.5 allows 500 with the request's own
    state.setPolicy("", Map.of("conditional_disagg_isl_threshold", "100000",
        "conditional_disagg_decode_busy_threshold", "0.5"));
    BookingAnswer first = booked(state.book(request("fits", 8000, Disaggregation.AUTO), 1, 0));
    assertThat(first.selection().disaggregated()).as("0 + 500 blocks: at the fraction").isFalse();
    assertThat(load(state, first.selection().rank()).decodeBlocks()).isEqualTo(500);
    BookingAnswer second = booked(state.book(request("over", 16, Disaggregation.AUTO), 2, 0));
    assertThat(second.selection().disaggregated()).as("500 + 1 blocks: above it").isTrue();
    state.setPolicy("", Map.of("conditional_disagg_decode_busy_threshold", ""));
    assertThat(booked(state.book(request("off", 16, Disaggregation.AUTO), 3, 0)).selection().disaggregated())
        .as("guard off").isFalse();
  }

  @Test
  void badConditionalRulesAndBusyThresholdsAreRefusedAndChangeNothing() {
    AdmissionState state = pd();
    long version = state.view().version();
    for (Map<String, String> bad : java.util.List.of(Map.of("conditional_disagg_policy", "greedy"),
        Map.of("conditional_disagg_policy", "PREFILL-LOAD"),
        Map.of("conditional_disagg_prefill_busy_threshold", "-0.1"),
        Map.of("conditional_disagg_prefill_busy_threshold", "x"),
        Map.of("conditional_disagg_decode_busy_threshold", "-1"),
        Map.of("conditional_disagg_decode_busy_threshold", "NaN"),
        Map.of("conditional_disagg_decode_busy_threshold", "Infinity"))) {
      try {
        state.setPolicy("", bad);
        throw new AssertionError("accepted " + bad);
      } catch (io.kvrouter.core.error.RoutingException e) {
        assertThat(e.error().reason()).as(bad.toString()).isEqualTo(RoutingError.INVALID_POLICY_PARAMETER);
      }
    }
    assertThat(state.view().version()).isEqualTo(version);
    assertThat(state.view().policy().disaggregation())
        .isEqualTo(io.kvrouter.core.policy.DisaggregationConfig.OFF);
  }

  @Test
  void aDecodeOnlyModelAskedForAggregationIsRefusedAndNothingIsBooked() {
    AdmissionState state = state(worker("d1", WorkerRole.DECODE), worker("p1", WorkerRole.PREFILL));
    RoutingError error = rejected(state.book(request("r", 100, Disaggregation.AGGREGATED), 1, 0));
    assertThat(error.code()).isEqualTo(RoutingError.Code.FAILED_PRECONDITION);
    assertThat(error.reason()).isEqualTo(RoutingError.NO_AGGREGATED_WORKERS);
    assertThat(state.snapshot().bookings()).isEmpty();
    for (int i = 0; i < state.view().rankCount(); i++) {
      assertThat(state.view().cell(i).booked().inFlight()).isZero();
    }
  }

  @Test
  void aDisaggregatedBookNeedsBothRoles() {
    AdmissionState aggregated = state(worker("a", WorkerRole.AGGREGATED), worker("d", WorkerRole.DECODE));
    assertThat(rejected(aggregated.book(request("r", 100, Disaggregation.DISAGGREGATED), 1, 0)).reason())
        .isEqualTo(RoutingError.NO_PREFILL_WORKERS);
    AdmissionState prefillOnly = state(worker("p", WorkerRole.PREFILL));
    assertThat(rejected(prefillOnly.book(request("r", 100, Disaggregation.AUTO), 1, 0)).reason())
        .isEqualTo(RoutingError.NO_DECODE_WORKERS);
    assertThat(rejected(prefillOnly.book(request("r", 100, Disaggregation.DISAGGREGATED), 1, 0)).reason())
        .isEqualTo(RoutingError.NO_DECODE_WORKERS);
    assertThat(aggregated.snapshot().bookings()).isEmpty();
    assertThat(prefillOnly.snapshot().bookings()).isEmpty();
  }

  @Test
  void aggregatedBooksNeverReachPrefillOrDecodeWorkersAndADecodeOnlyModelBooksDecodeRanks() {
    AdmissionState mixed = state(worker("a", WorkerRole.AGGREGATED), worker("d", WorkerRole.DECODE));
    for (int i = 0; i < 5; i++) {
      assertThat(booked(mixed.book(request("r" + i, 100, Disaggregation.AUTO), i, 0)).selection().rank().workerId())
          .isEqualTo("a");
    }
    AdmissionState decodeOnly = state(worker("d1", WorkerRole.DECODE), worker("d2", WorkerRole.DECODE));
    BookingAnswer answer = booked(decodeOnly.book(request("r", 100, Disaggregation.AUTO), 1, 0));
    assertThat(answer.selection().disaggregated()).isFalse();
    assertThat(load(decodeOnly, answer.selection().rank()).prefillTokens()).isEqualTo(100);
  }

  @Test
  void aPinAppliesToTheHalfOfThePinnedWorkersRole() {
    AdmissionState state = pd();
    BookingAnswer pinnedDecode = booked(state.book(Requests.pinned(request("r1", 100, Disaggregation.AUTO), "d2",
        null).withDisaggregation(Disaggregation.AUTO), 1, 0));
    assertThat(pinnedDecode.selection().decode().rank().workerId()).isEqualTo("d2");
    BookingAnswer pinnedPrefill = booked(state.book(Requests.pinned(request("r2", 100, Disaggregation.AUTO), "p2",
        null).withDisaggregation(Disaggregation.AUTO), 2, 0));
    assertThat(pinnedPrefill.selection().rank().workerId()).isEqualTo("p2");
  }

  @Test
  void aReplayAnswersThePairWithBothRanksLoadsNow() {
    AdmissionState state = pd();
    BookingAnswer first = booked(state.book(request("r", 100, Disaggregation.AUTO), 1, 0));
    state.markPrefillDone("r", first.attempt());
    BookingAnswer replay = booked(state.book(request("r", 100, Disaggregation.AUTO), 2, 0));
    assertThat(replay.replay()).isTrue();
    assertThat(replay.attempt()).isEqualTo(first.attempt());
    assertThat(replay.selection().decode().rank()).isEqualTo(first.selection().decode().rank());
    assertThat(replay.selection().load().inFlight()).isZero();
    assertThat(replay.selection().decode().load().inFlight()).isEqualTo(1);
  }

  @Test
  void aRecoveredStateKeepsBothHalvesOfEveryPairAndReleasesThemTogether() {
    AdmissionState owner = pd();
    BookingAnswer open = booked(owner.book(request("open", 100, Disaggregation.AUTO), 1, 0));
    BookingAnswer done = booked(owner.book(request("done", 100, Disaggregation.AUTO), 2, 0));
    owner.markPrefillDone("done", done.attempt());
    io.kvrouter.core.replication.ModelReplica replica = new io.kvrouter.core.replication.ModelReplica("m", 10_000,
        io.kvrouter.core.selection.KvOverlapSource.NONE, view -> {});
    io.kvrouter.core.testkit.Replication.drainOne(owner, clock.millis());
    for (io.kvrouter.core.replication.SnapshotChunk chunk : owner.replicaSnapshot(clock.millis(), 1024)) {
      replica.apply(chunk, clock.millis());
    }
    AdmissionState recovered = AdmissionState.recover("m", AdmissionSettings.DEFAULTS, clock,
        io.kvrouter.core.selection.KvOverlapSource.NONE, view -> {}, replica.recoveredState(), Duration.ofSeconds(2));
    assertThat(LedgerInvariants.firstMismatch(recovered.snapshot())).isNull();
    // loads recomputed from the pairs: the open pair holds both ranks, the done one its decode rank only
    assertThat(load(recovered, open.selection().rank()).prefillTokens()).isEqualTo(100);
    assertThat(load(recovered, open.selection().decode().rank()).decodeBlocks()).isEqualTo(7);
    assertThat(load(recovered, done.selection().decode().rank()).inFlight()).isEqualTo(1);
    assertThat(recovered.snapshot().bookings()).extracting(ModelSnapshot.BookingSnapshot::decodeRank)
        .containsExactlyInAnyOrder(open.selection().decode().rank(), done.selection().decode().rank());
    MutationResult released = recovered.release("open", open.attempt());
    assertThat(released.decodeLoad()).isNotNull();
    assertThat(recovered.markPrefillDone("done", done.attempt()).applied()).as("already done before").isFalse();
    assertThat(recovered.release("done", done.attempt()).applied()).isTrue();
    for (int i = 0; i < recovered.view().rankCount(); i++) {
      assertThat(recovered.view().cell(i).booked()).extracting(RankLoad::inFlight, RankLoad::prefillTokens,
          RankLoad::decodeBlocks).containsExactly(0, 0L, 0L);
    }
  }

  @Test
  void aHardSessionKeepsItsPairsPrefillRankWhileTheDecodeRankIsChosenOnLoadEachTurn() {
    AdmissionState state = pd();
    state.setPolicy("least_in_flight", Map.of("seed", "7"));
    SessionAffinity session = SessionAffinity.of("conversation", SessionMode.HARD);
    BookingAnswer first = booked(state.book(request("t0", 100, Disaggregation.AUTO).withSession(session), 1, 0));
    assertThat(first.selection().disaggregated()).isTrue();
    assertThat(first.session().kind()).isEqualTo(SessionOutcome.Kind.BOUND);
    Rank prefill = first.selection().rank();
    java.util.Set<String> decodeWorkers = new java.util.HashSet<>();
    decodeWorkers.add(first.selection().decode().rank().workerId());
    for (int turn = 1; turn <= 3; turn++) {
      // nothing is released: least_in_flight alone would move the prefill to the idle prefill worker
      BookingAnswer next = booked(state.book(request("t" + turn, 100, Disaggregation.AUTO).withSession(session),
          1 + turn, 0));
      assertThat(next.selection().rank()).as("turn %d's prefill rank", turn).isEqualTo(prefill);
      assertThat(next.session().kind()).isEqualTo(SessionOutcome.Kind.KEPT);
      assertThat(next.selection().decode()).isNotNull();
      decodeWorkers.add(next.selection().decode().rank().workerId());
    }
    assertThat(decodeWorkers).as("decode ranks, spread by load").containsExactlyInAnyOrder("d1", "d2");
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  @Test
  void requiredTaintsFilterBothHalvesOfAPair() {
    java.util.Set<String> h100 = java.util.Set.of("gpu=h100");
    AdmissionState state = state(worker("p1", WorkerRole.PREFILL).withTaints(h100), worker("p2", WorkerRole.PREFILL),
        worker("d1", WorkerRole.DECODE), worker("d2", WorkerRole.DECODE).withTaints(h100));
    for (int i = 0; i < 3; i++) {
      SelectionRequest constrained = SelectionRequests.withPlacement(request("r" + i, 100, Disaggregation.AUTO),
          java.util.List.of("gpu=h100"), java.util.List.of(), null);
      SelectionResult selection = booked(state.book(constrained, 1 + i, 0)).selection();
      assertThat(selection.rank().workerId()).isEqualTo("p1");
      assertThat(selection.decode().rank().workerId()).isEqualTo("d2");
    }
    SelectionRequest unmet = SelectionRequests.withPlacement(request("x", 100, Disaggregation.AUTO),
        java.util.List.of("gpu=b200"), java.util.List.of(), null);
    assertThat(rejected(state.book(unmet, 9, 0)).reason()).isEqualTo(RoutingError.REQUIRED_TAINTS_UNMET);
  }
}
