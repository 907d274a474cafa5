package io.kvrouter.core.admission;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.explain.Decision;
import io.kvrouter.core.explain.DecisionLog;
import io.kvrouter.core.explain.QueueWait;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.LedgerInvariants;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Selections;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The admission queue's semantics on one admission state with a manual clock: when a Book waits, in which order Books
 * leave (FCFS, WSPT, strict tiers, aging), how classes share by deficit round robin, the per-worker limits, what
 * dispatches, deadlines, cancels, and what an advisory Select answers meanwhile.
 *
 * <p>Most scripts use one worker and {@code queue_prefill_tokens_threshold = 0}: a rank holding any prefill is busy,
 * so exactly one Book is prefilling at a time and each MarkPrefillDone lets exactly one queued Book go.
 */
class AdmissionQueueTest {
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);
  /** Device-cached blocks every rank reports for a request's hashes (0: nothing cached). */
  private final Map<String, Integer> cachedBlocksByWorker = new HashMap<>();
  private final KvOverlapSource overlap = new KvOverlapSource() {
    @Override
    public void overlaps(SelectionView view, long[] hashes, Candidates candidates) {
      for (int i = 0; i < candidates.size(); i++) {
        int cached = cachedBlocksByWorker.getOrDefault(view.rank(candidates.rankIndex(i)).workerId(), 0);
        candidates.setOverlap(i, Math.min(cached, hashes.length), 0, 0);
      }
    }
  };
  private final DecisionLog decisions = new DecisionLog(256);
  private AdmissionState state;
  private long nonces;

  @BeforeEach
  void setUp() {
    state = new AdmissionState("m", new AdmissionSettings(Duration.ofSeconds(300), Duration.ofSeconds(10)), clock,
        overlap, view -> {}, 0);
    state.recordDecisionsTo(decisions);
  }

  // ---- helpers

  private void workers(String... ids) {
    for (String id : ids) {
      state.register(worker(id));
    }
  }

  private void policy(String... keyValues) {
    Map<String, String> parameters = new LinkedHashMap<>();
    parameters.put("seed", "7");
    for (int i = 0; i < keyValues.length; i += 2) {
      parameters.put(keyValues[i], keyValues[i + 1]);
    }
    state.setPolicy("least_in_flight", parameters);
  }

  private static SelectionRequest request(String id, int isl) {
    return request(id, isl, 0, 0, "");
  }

  private static SelectionRequest request(String id, int isl, int priority, int strictPriority, String policyClass) {
    return new SelectionRequest("m", id, null, isl, 0, null, null, null, null, priority, null, null, null, strictPriority,
        policyClass);
  }

  private BookOutcome book(SelectionRequest request) {
    return state.book(request, ++nonces, 0);
  }

  private BookingAnswer booked(SelectionRequest request) {
    BookOutcome outcome = book(request);
    assertThat(outcome).as("%s booked at once", request.requestId()).isInstanceOf(BookOutcome.Booked.class);
    return ((BookOutcome.Booked) outcome).answer();
  }

  private void queued(SelectionRequest request) {
    assertThat(book(request)).as("%s queued", request.requestId()).isInstanceOf(BookOutcome.Queued.class);
  }

  /** The request ids the queue booked since the last drain, in order; fails on a queued Book that was rejected. */
  private List<String> bookedFromQueue() {
    List<String> ids = new ArrayList<>();
    for (Completion completion : state.drainCompletions()) {
      assertThat(completion.outcome()).isInstanceOf(BookOutcome.Booked.class);
      ids.add(((BookOutcome.Booked) completion.outcome()).answer().requestId());
    }
    return ids;
  }

  /**
   * With one Book prefilling at a time: marks the prefilling one done, {@code count} times, and returns the order in
   * which the queue booked the waiting ones.
   */
  private List<String> dispatchOneByOne(BookingAnswer prefilling, int count) {
    List<String> order = new ArrayList<>();
    BookingAnswer current = prefilling;
    for (int i = 0; i < count; i++) {
      assertThat(state.markPrefillDone(current.requestId(), current.attempt()).applied()).isTrue();
      List<Completion> done = state.drainCompletions();
      assertThat(done).as("one Book leaves per MarkPrefillDone").hasSize(1);
      current = ((BookOutcome.Booked) done.get(0).outcome()).answer();
      order.add(current.requestId());
    }
    return order;
  }

  private QueueWait lastQueueWait(String requestId) {
    for (Decision decision : decisions.newest(0)) {
      var explanation = decision.explain("n");
      if (explanation.requestId().equals(requestId)) {
        return explanation.queue();
      }
    }
    throw new AssertionError("no decision for " + requestId);
  }

  private QueueSnapshot.ClassSnapshot queueClass(String name) {
    return state.snapshot().queue().classes().stream().filter(c -> c.name().equals(name)).findFirst().orElseThrow();
  }

  // ---- when a Book waits

  @Test
  void withoutAThresholdNoBookEverWaits() {
    workers("a");
    for (int i = 0; i < 50; i++) {
      booked(request("r" + i, 8000));
    }
    assertThat(state.snapshot().queue().enabled()).isFalse();
    assertThat(state.pending()).isZero();
  }

  @Test
  void aBookIsAdmittedAtOnceWhileSomeEligibleRankIsNotBusy() {
    workers("a", "b");
    policy("queue_prefill_tokens_threshold", "0");
    BookingAnswer first = booked(request("r1", 100));
    BookingAnswer second = booked(request("r2", 100));
    assertThat(first.selection().rank()).isNotEqualTo(second.selection().rank());
    assertThat(first.queuedMicros()).isZero();
    assertThat(first.policyClass()).isEqualTo("default");
    assertThat(lastQueueWait("r1")).as("it did not wait").isNull();
    assertThat(state.pending()).isZero();
  }

  @Test
  void aBookWaitsWhileEveryEligibleRankIsBusyAndLeavesWhenOneIsFreed() {
    workers("a", "b");
    // kv: the freed rank (no prefill left) is the cheaper one, so the queued Book lands there
    state.setPolicy("kv", Map.of("queue_prefill_tokens_threshold", "0", "seed", "7"));
    BookingAnswer onA = booked(request("r1", 100));
    booked(request("r2", 100));
    queued(request("r3", 100));
    assertThat(queueClass("default").depth()).isEqualTo(1);
    assertThat(queueClass("default").rawIslTokens()).isEqualTo(100);
    assertThat(state.snapshot().queue().waiting()).singleElement()
        .satisfies(w -> assertThat(w.reason()).isEqualTo("ALL_BUSY"));
    clock.advance(Duration.ofMillis(7));
    state.markPrefillDone("r1", onA.attempt());
    List<Completion> done = state.drainCompletions();
    assertThat(done).singleElement().satisfies(c -> assertThat(c.outcome())
        .isInstanceOfSatisfying(BookOutcome.Booked.class, b -> {
          assertThat(b.answer().requestId()).isEqualTo("r3");
          assertThat(b.answer().selection().rank()).isEqualTo(onA.selection().rank());
          assertThat(b.answer().queuedMicros()).isEqualTo(7_000);
        }));
    QueueWait wait = lastQueueWait("r3");
    assertThat(wait.reason()).isEqualTo("ALL_BUSY");
    assertThat(wait.busyRanks()).isEqualTo(2);
    assertThat(wait.eligibleRanks()).isEqualTo(2);
    assertThat(wait.dispatchedBy()).isEqualTo("PREFILL_DONE");
    assertThat(wait.waitedMicros()).isEqualTo(7_000);
    assertThat(queueClass("default").dispatched()).isEqualTo(1);
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  @Test
  void thresholdsAreOredAndTheBusyWorkerRatioQueuesBeforeEveryRankIsBusy() {
    workers("a", "b", "c", "d");
    // decode blocks: a 1,000-block rank is busy above 0.1 × 1,000 = 100 blocks; a 1,616-token prompt holds 101
    policy("queue_decode_blocks_threshold_frac", "0.1", "queue_prefill_tokens_threshold", "5000");
    booked(request("decode-heavy", 1616)); // busy by decode blocks only
    booked(request("prefill-heavy", 5001)); // busy by prefill tokens (and decode)
    booked(request("light-1", 16));
    booked(request("light-2", 16)); // two of four busy: not every rank, not queued
    assertThat(state.pending()).isZero();
    policy("queue_busy_worker_ratio", "0.5");
    queued(request("waits", 16)); // half the ranks busy: the pool is busy at ratio 0.5
    assertThat(state.snapshot().queue().waiting()).singleElement()
        .satisfies(w -> assertThat(w.reason()).isEqualTo("ALL_BUSY"));
  }

  @Test
  void ranksTheOverloadFilterRemovesCountAsBusy() {
    workers("a");
    policy("active_prefill_tokens_threshold", "0");
    booked(request("holder", 100));
    assertThat(book(request("refused", 100))).as("no queueing: overload is a rejection")
        .isInstanceOfSatisfying(BookOutcome.Rejected.class,
            r -> assertThat(r.error().reason()).isEqualTo(RoutingError.ALL_WORKERS_OVERLOADED));
    policy("queue_threshold_frac", "0.5");
    queued(request("waits", 100));
    assertThat(state.snapshot().queue().waiting().get(0).reason()).isEqualTo("ALL_BUSY");
  }

  /**
   * Within a class every Book goes through the queue once it has Books waiting; each placement waits in a lane of
   * its own, so a Book pinned to a busy worker holds up only the Books that can go nowhere else.
   */
  @Test
  void anArrivalWithABacklogInItsClassGoesThroughTheQueueAndAHeadPinnedToABusyWorkerBlocksOnlyItsLane() {
    workers("a", "b");
    policy("queue_prefill_tokens_threshold", "0");
    BookingAnswer onA = booked(withPin(request("holder", 100), "a"));
    queued(withPin(request("pinned", 100), "a"));
    BookingAnswer free = booked(request("anywhere", 100)); // b is free: it passes the pinned head
    assertThat(free.selection().rank()).isEqualTo(new Rank("b", 0));
    QueueWait wait = lastQueueWait("anywhere");
    assertThat(wait.reason()).isEqualTo("BACKLOG");
    assertThat(wait.queuedAhead()).isEqualTo(1);
    assertThat(wait.dispatchedBy()).isEqualTo("ENQUEUE");
    queued(request("second", 100)); // both busy now: it waits behind the pinned one's class backlog
    state.markPrefillDone("holder", onA.attempt());
    assertThat(bookedFromQueue()).containsExactly("pinned");
  }

  // ---- order

  @Test
  void fcfsOrdersByArrivalWithAPriorityJumpOfThatManySeconds() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0");
    BookingAnswer holder = booked(request("holder", 100));
    queued(request("e1", 100, 0, 0, "")); // score 0 − t
    clock.advance(Duration.ofSeconds(1));
    queued(request("e2", 100, 0, 0, "")); // −(t + 1)
    clock.advance(Duration.ofSeconds(1));
    queued(request("e3", 100, 5, 0, "")); // 5 − (t + 2): first
    clock.advance(Duration.ofSeconds(1));
    queued(request("e4", 100, 3, 0, "")); // 3 − (t + 3): ties e1, which arrived first
    assertThat(dispatchOneByOne(holder, 4)).containsExactly("e3", "e1", "e4", "e2");
  }

  @Test
  void wsptOrdersByWeightOverUncachedPromptTokens() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0", "queue_policy", "wspt");
    BookingAnswer holder = booked(request("holder", 100));
    queued(request("e1", 4000)); // 1 / 4000
    queued(request("e2", 1000)); // 1 / 1000
    queued(request("e3", 2000, 1, 0, "")); // 2 / 2000: ties e2, which arrived first
    queued(request("e4", 500)); // 1 / 500
    assertThat(dispatchOneByOne(holder, 4)).containsExactly("e4", "e2", "e3", "e1");
  }

  @Test
  void wsptCostsOnlyTheUncachedPart() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0", "queue_policy", "wspt");
    BookingAnswer holder = booked(request("holder", 100));
    queued(withHashes(request("long-uncached", 1000), 0));
    cachedBlocksByWorker.put("a", 60); // 960 of 1,600 tokens cached: 640 uncached
    queued(withHashes(request("longer-mostly-cached", 1600), 100));
    assertThat(state.snapshot().queue().waiting()).extracting(QueueSnapshot.WaitingSnapshot::uncachedTokens)
        .containsExactly(1000L, 640L);
    assertThat(dispatchOneByOne(holder, 2)).containsExactly("longer-mostly-cached", "long-uncached");
  }

  @Test
  void aHigherStrictTierAlwaysLeavesFirst() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0");
    BookingAnswer holder = booked(request("holder", 100));
    queued(request("tier0", 100, 0, 0, ""));
    clock.advance(Duration.ofSeconds(1));
    queued(request("tier2-early", 100, 0, 2, ""));
    clock.advance(Duration.ofSeconds(1));
    queued(request("tier1-jumped", 100, 100, 1, "")); // a 100 s jump does not cross a tier
    clock.advance(Duration.ofSeconds(1));
    queued(request("tier2-late", 100, 0, 2, ""));
    assertThat(dispatchOneByOne(holder, 4)).containsExactly("tier2-early", "tier2-late", "tier1-jumped", "tier0");
  }

  /**
   * Without aging a lower tier waits as long as higher ones keep arriving (here: 200 dispatches); with
   * {@code queue_aging_ms} it leaves at the first dispatch after it has waited that long.
   */
  @Test
  void strictTiersStarveALowerOneUnlessAgingBoundsItsWait() {
    for (String aging : List.of("0", "5000")) {
      setUp();
      workers("a");
      policy("queue_prefill_tokens_threshold", "0", "queue_aging_ms", aging);
      BookingAnswer current = booked(request("holder", 100));
      long start = clock.millis();
      queued(request("low", 100, 0, 0, ""));
      queued(request("high-0", 100, 0, 1, ""));
      long lowLeftAfter = -1;
      for (int i = 1; i <= 200 && lowLeftAfter < 0; i++) {
        clock.advance(Duration.ofMillis(100));
        queued(request("high-" + i, 100, 0, 1, "")); // the higher tier never runs dry
        state.markPrefillDone(current.requestId(), current.attempt());
        current = ((BookOutcome.Booked) state.drainCompletions().get(0).outcome()).answer();
        if (current.requestId().equals("low")) {
          lowLeftAfter = clock.millis() - start;
          assertThat(lastQueueWait("low").aged()).isTrue();
        }
      }
      if (aging.equals("0")) {
        assertThat(lowLeftAfter).as("starved").isEqualTo(-1);
      } else {
        assertThat(lowLeftAfter).isEqualTo(5000);
      }
    }
  }

  // ---- classes

  /**
   * Two always-backlogged classes of 512-token Books with quanta 512 and 128 share the first 320 dispatches 4:1
   * (256:64); equal quanta share them evenly. The bound: each class within one quantum plus one Book's cost of its
   * share, here 2 Books.
   */
  @Test
  void deficitRoundRobinSharesInProportionToTheQuanta() {
    assertThat(share(512, 128, 512)).isBetween(254, 258);
    assertThat(share(512, 512, 512)).isBetween(158, 162);
    assertThat(share(128, 512, 512)).isBetween(62, 66);
  }

  /** Quanta far below the cost: bulk rounds make a choice in one pass; shares follow the quanta (3:1 of 320). */
  @Test
  void aRoundWithoutProgressAddsRoundsInBulkSoAnExpensiveHeadNeverStarvesTheRing() {
    assertThat(share(3, 1, 8000)).isBetween(238, 242);
  }

  /** Premium's Books among the first 320 dispatched, 320 of each class waiting, every Book {@code cost} tokens. */
  private int share(long premiumQuantum, long regularQuantum, int cost) {
    setUp();
    workers("a");
    policy("queue_prefill_tokens_threshold", "0", "max_pending", "1000",
        "class.premium", "quantum=" + premiumQuantum, "class.regular", "quantum=" + regularQuantum);
    BookingAnswer current = booked(request("holder", 100));
    for (int i = 0; i < 320; i++) {
      queued(request("p" + i, cost, 0, 0, "premium"));
      queued(request("r" + i, cost, 0, 0, "regular"));
    }
    int premium = 0;
    for (int i = 0; i < 320; i++) {
      state.markPrefillDone(current.requestId(), current.attempt());
      current = ((BookOutcome.Booked) state.drainCompletions().get(0).outcome()).answer();
      premium += current.requestId().startsWith("p") ? 1 : 0;
      assertThat(current.policyClass()).isEqualTo(current.requestId().startsWith("p") ? "premium" : "regular");
    }
    return premium;
  }

  @Test
  void aClassComesFromTheRequestsFamilyAndItsUncachedPromptBucket() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0", "queue_isl_buckets", "0:short,2048:long",
        "class.tenant-long", "family=tenant,bucket=long", "class.tenant", "family=tenant",
        "class.any-long", "bucket=long", "class.vip", "quantum=4096");
    BookingAnswer holder = booked(request("holder", 100));
    queued(request("t-short", 1000, 0, 0, "tenant"));
    queued(request("t-long", 4000, 0, 0, "tenant"));
    queued(request("other-long", 4000, 0, 0, "nobody")); // unknown family: the default family
    queued(request("default-short", 1000, 0, 0, ""));
    queued(request("named", 1000, 0, 0, "vip")); // an explicit class, named directly
    cachedBlocksByWorker.put("a", 200); // 3,200 of 4,000 tokens cached: 800 uncached, bucket short
    queued(withHashes(request("t-long-but-cached", 4000, 0, 0, "tenant"), 250));
    Map<String, String> classes = new LinkedHashMap<>();
    for (QueueSnapshot.WaitingSnapshot w : state.snapshot().queue().waiting()) {
      classes.put(w.requestId(), w.policyClass());
    }
    assertThat(classes).containsExactly(Map.entry("t-short", "tenant"), Map.entry("t-long", "tenant-long"),
        Map.entry("other-long", "any-long"), Map.entry("default-short", "default"), Map.entry("named", "vip"),
        Map.entry("t-long-but-cached", "tenant"));
    dispatchOneByOne(holder, 6);
  }

  @Test
  void aPolicyChangeKeepsWaitingBooksAndPutsThemInTheirNewClassesAndOrder() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0", "class.gold", "quantum=100");
    BookingAnswer holder = booked(request("holder", 100));
    queued(request("big", 4000, 0, 0, "gold"));
    queued(request("small", 500, 0, 0, "gold"));
    assertThat(queueClass("gold").depth()).isEqualTo(2);
    policy("class.gold", "", "queue_policy", "wspt"); // gold removed: its Books go to default, ordered by WSPT
    assertThat(queueClass("default").depth()).isEqualTo(2);
    assertThat(state.snapshot().queue().classes()).extracting(QueueSnapshot.ClassSnapshot::name)
        .containsExactly("default");
    assertThat(dispatchOneByOne(holder, 2)).containsExactly("small", "big");
  }

  // ---- limits

  @Test
  void aLimitRefusesTheBookAfterTheOneThatCrossesItAndScalesWithTheWorkerCount() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0", "class.batch", "requests_per_worker=2,raw_isl_tokens_per_worker=1000");
    booked(request("holder", 100));
    queued(request("q1", 600, 0, 0, "batch"));
    queued(request("q2", 600, 0, 0, "batch")); // 600 < 1,000 before it: taken, crossing the cap
    BookOutcome refused = book(request("q3", 10, 0, 0, "batch"));
    assertThat(refused).isInstanceOfSatisfying(BookOutcome.Rejected.class, r -> {
      assertThat(r.error().code()).isEqualTo(RoutingError.Code.RESOURCE_EXHAUSTED);
      assertThat(r.error().reason()).isEqualTo(RoutingError.QUEUE_LIMIT);
      assertThat(r.error().details()).containsEntry(RoutingError.DETAIL_POLICY_CLASS, "batch")
          .containsEntry(RoutingError.DETAIL_LIMIT_KIND, "requests")
          .containsEntry(RoutingError.DETAIL_LIMIT_CURRENT, "2").containsEntry(RoutingError.DETAIL_LIMIT, "2");
      assertThat(r.error().message()).contains("'batch'", "requests", "current=2", "limit=2");
    });
    assertThat(queueClass("batch").rejections()).containsEntry("QUEUE_LIMIT_REQUESTS", 1L);
    state.register(worker("b")); // b takes q1 at once; the caps are now 4 requests, 2,000 tokens
    assertThat(bookedFromQueue()).containsExactly("q1");
    assertThat(queueClass("batch").requestsLimit()).isEqualTo(4);
    queued(request("q4", 700, 0, 0, "batch")); // 600 before it
    queued(request("q5", 700, 0, 0, "batch")); // 1,300 before it: crosses 2,000
    assertThat(book(request("q6", 10, 0, 0, "batch"))).isInstanceOfSatisfying(BookOutcome.Rejected.class,
        r -> assertThat(r.error().details()).containsEntry(RoutingError.DETAIL_LIMIT_KIND, "raw_isl_tokens")
            .containsEntry(RoutingError.DETAIL_LIMIT_CURRENT, "2000")
            .containsEntry(RoutingError.DETAIL_LIMIT, "2000"));
  }

  @Test
  void aCachedTokenLimitCountsTheCachedPartOfWaitingBooks() {
    workers("a");
    cachedBlocksByWorker.put("a", 8);
    policy("queue_prefill_tokens_threshold", "0", "queue_cached_tokens_per_worker", "100");
    booked(request("holder", 100));
    queued(withHashes(request("q1", 200), 8)); // 128 cached tokens, 0 before it
    assertThat(book(withHashes(request("q2", 200), 8))).isInstanceOfSatisfying(BookOutcome.Rejected.class,
        r -> assertThat(r.error().details()).containsEntry(RoutingError.DETAIL_POLICY_CLASS, "default")
            .containsEntry(RoutingError.DETAIL_LIMIT_KIND, "cached_tokens")
            .containsEntry(RoutingError.DETAIL_LIMIT_CURRENT, "128"));
  }

  // ---- what dispatches

  @Test
  void aReleaseANewWorkerAndAPolicyChangeEachDispatch() {
    workers("a", "b");
    policy("queue_prefill_tokens_threshold", "0");
    BookingAnswer onA = booked(withPin(request("on-a", 100), "a"));
    booked(withPin(request("on-b", 100), "b"));
    queued(request("by-release", 100));
    state.release("on-a", onA.attempt());
    assertThat(bookedFromQueue()).containsExactly("by-release");
    assertThat(lastQueueWait("by-release").dispatchedBy()).isEqualTo("RELEASE");

    queued(request("by-worker", 100));
    state.register(worker("c"));
    assertThat(bookedFromQueue()).containsExactly("by-worker");
    assertThat(lastQueueWait("by-worker").dispatchedBy()).isEqualTo("WORKER_ADDED");

    queued(request("by-policy", 100));
    policy("queue_prefill_tokens_threshold", "1000");
    assertThat(bookedFromQueue()).containsExactly("by-policy");
    assertThat(lastQueueWait("by-policy").dispatchedBy()).isEqualTo("POLICY");
    assertThat(LedgerInvariants.firstMismatch(state.snapshot())).isNull();
  }

  /**
   * A recovered state admits only to workers that reported since it started: with queueing on, a Book that could go
   * nowhere yet waits (instead of UNAVAILABLE RECOVERING) and the first report lets it go.
   */
  @Test
  void aLoadReportDispatchesABookWaitingForARecoveredWorker() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0");
    var copy = new io.kvrouter.core.replication.ModelReplica("m", 10_000, KvOverlapSource.NONE, view -> {});
    state.drainReplicaDeltas(clock.millis(), Integer.MAX_VALUE);
    for (var chunk : state.replicaSnapshot(clock.millis(), 4096)) {
      copy.apply(chunk, clock.millis());
    }
    state = AdmissionState.recover("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE, view -> {},
        copy.recoveredState(), Duration.ofSeconds(2));
    state.recordDecisionsTo(decisions);
    assertThat(state.recovering()).isTrue();
    queued(request("waits-for-a", 100));
    state.reportLoad("a", List.of(new RankReport(0, 0, 0, 0)));
    assertThat(bookedFromQueue()).containsExactly("waits-for-a");
    assertThat(lastQueueWait("waits-for-a").dispatchedBy()).isEqualTo("LOAD_REPORT");
  }

  @Test
  void everyBookPastItsDeadlineIsRejectedNotOnlyTheHeadAndACancelledOneLeaves() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0");
    booked(request("holder", 100));
    long now = clock.millis();
    assertThat(state.book(request("patient", 100), 1001, 0)).isInstanceOf(BookOutcome.Queued.class);
    assertThat(state.book(request("hurried", 100), 1002, now + 500)).isInstanceOf(BookOutcome.Queued.class);
    assertThat(state.book(request("gives-up", 100), 1003, 0)).isInstanceOf(BookOutcome.Queued.class);
    assertThat(state.cancelBook("gives-up", 1003)).isTrue();
    assertThat(state.cancelBook("gives-up", 1003)).as("once").isFalse();
    clock.advance(Duration.ofMillis(500));
    state.expire();
    assertThat(state.drainCompletions()).singleElement().satisfies(c -> {
      assertThat(c.nonce()).isEqualTo(1002);
      assertThat(c.outcome()).isInstanceOfSatisfying(BookOutcome.Rejected.class, r -> {
        assertThat(r.error().code()).isEqualTo(RoutingError.Code.DEADLINE_EXCEEDED);
        assertThat(r.error().reason()).isEqualTo(RoutingError.QUEUE_DEADLINE_EXCEEDED);
      });
    });
    assertThat(state.snapshot().queue().waiting()).extracting(QueueSnapshot.WaitingSnapshot::requestId)
        .containsExactly("patient");
    assertThat(queueClass("default").rejections()).containsEntry("QUEUE_DEADLINE_EXCEEDED", 1L)
        .containsEntry("CANCELLED", 1L);
  }

  /**
   * An advisory Select takes no queue slot: with every rank busy and Books waiting it answers the pick a Book would
   * get if admitted now (the least loaded rank), books nothing and leaves the queue as it was.
   */
  @Test
  void anAdvisorySelectAnswersThePickOfNowAndTakesNoQueueSlot() {
    workers("a", "b");
    state.setPolicy("kv", Map.of("queue_prefill_tokens_threshold", "0", "seed", "7"));
    booked(request("big", 4000));
    booked(request("small", 100));
    queued(request("waiting", 100));
    SelectionResult pick = Selections.select(state, clock, request("probe", 100));
    assertThat(pick.rank()).as("the cheaper of two busy ranks").isEqualTo(
        state.ledgerSnapshot().bookings().stream().filter(b -> b.requestId().equals("small")).findFirst()
            .orElseThrow().rank());
    assertThat(state.pending()).isEqualTo(1);
    assertThat(state.snapshot().bookings()).hasSize(2);
    assertThat(queueClass("default").enqueued()).isEqualTo(1);
  }

  // ---- replication and handover

  @Test
  void queuedBooksAreReplicatedAndTheNextIncarnationAnswersThemRecovering() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0");
    booked(request("holder", 100));
    state.book(request("w1", 100), 101, 0, "caller-1");
    state.book(request("w2", 100, 0, 0, "tenant"), 102, 0, "caller-2");
    state.book(request("w3", 100), 103, 0, "caller-3");
    state.cancelBook("w3", 103);
    var copy = new io.kvrouter.core.replication.ModelReplica("m", 10_000, KvOverlapSource.NONE, view -> {});
    for (var chunk : state.replicaSnapshot(clock.millis(), 4096)) {
      copy.apply(chunk, clock.millis());
    }
    assertThat(copy.queued().values()).extracting(io.kvrouter.core.replication.QueuedBook::replyTo)
        .containsExactly("caller-1", "caller-2");
    AdmissionState next = AdmissionState.recover("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE,
        view -> {}, copy.recoveredState(), Duration.ofSeconds(2));
    assertThat(next.pending()).as("not resumed").isZero();
    assertThat(next.takeRecoveredQueue()).extracting(b -> b.nonce() + " " + b.requestId())
        .containsExactly("101 w1", "102 w2");
    assertThat(next.takeRecoveredQueue()).as("once").isEmpty();
    assertThat(next.recoveredQueueError().code()).isEqualTo(RoutingError.Code.UNAVAILABLE);
    assertThat(next.recoveredQueueError().reason()).isEqualTo(RoutingError.RECOVERING);
    assertThat(next.snapshot().queue().classes().get(0).rejections()).containsEntry("RECOVERING", 2L);
  }

  @Test
  void handingTheStateOverAnswersEveryWaitingBookRecovering() {
    workers("a");
    policy("queue_prefill_tokens_threshold", "0");
    booked(request("holder", 100));
    queued(request("w1", 100));
    queued(request("w2", 100));
    state.rejectQueued();
    assertThat(state.drainCompletions()).hasSize(2).allSatisfy(c -> assertThat(c.outcome())
        .isInstanceOfSatisfying(BookOutcome.Rejected.class,
            r -> assertThat(r.error().reason()).isEqualTo(RoutingError.RECOVERING)));
    assertThat(state.pending()).isZero();
  }

  private static SelectionRequest withPin(SelectionRequest r, String worker) {
    return new SelectionRequest(r.model(), r.requestId(), r.blockHashes(), r.islTokens(), 0, worker, null,
        r.allowedWorkers(), null, r.priority(), null, null, null, r.strictPriority(), r.policyClass());
  }

  private static SelectionRequest withAllowed(SelectionRequest r, Set<String> workers) {
    return r.withAllowedWorkers(workers);
  }

  /** The request with {@code blocks} sequence hashes (only their count matters to the test's overlap source). */
  private static SelectionRequest withHashes(SelectionRequest r, int blocks) {
    long[] hashes = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      hashes[i] = r.requestId().hashCode() * 1000L + i;
    }
    return new SelectionRequest(r.model(), r.requestId(), hashes, r.islTokens(), 0, r.pinnedWorker(), null,
        r.allowedWorkers(), null, r.priority(), null, null, null, r.strictPriority(), r.policyClass());
  }
}
