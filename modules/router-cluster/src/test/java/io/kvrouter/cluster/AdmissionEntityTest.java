package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.admission.RankReport;
import io.kvrouter.core.policy.Policy;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The sharded admission entity and its facade on a real one-node cluster, every message serialized. */
class AdmissionEntityTest {
  private static final ManualClock clock = new ManualClock(1_800_000_000_000L);
  private static TestCluster cluster;

  @BeforeAll
  static void start() {
    cluster = TestCluster.start(clock);
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static BookingAnswer book(SchedulerQueue queue, String requestId) {
    return join(queue.book(SelectionRequest.of(queue.model(), requestId, 64), null));
  }

  /** From the same view and picker state, the inline pick equals the actor's, for every policy. */
  @Test
  void inlineAndActorPathsPickTheSameWorker() {
    Random random = new Random(3);
    for (Policy policy : Policy.values()) {
      SchedulerQueue queue = cluster.modelWithWorkers("parity-" + policy.wireName(), policy.wireName(),
          "w1", "w2", "w3", "w4");
      join(queue.register(new io.kvrouter.core.model.WorkerConfig("w5", 0, 2, 8192, 1000, 16, "", "", null), null));
      List<BookingAnswer> live = new ArrayList<>();
      for (int round = 0; round < 120; round++) {
        // move the state: a random Book or Release through the actor, sometimes an engine report
        if (live.isEmpty() || random.nextInt(3) > 0) {
          live.add(join(queue.book(new SelectionRequest(queue.model(), "r" + round, null,
              1 + random.nextInt(3000), 0, null, null, null, 0, null, null, null), null)));
        } else {
          BookingAnswer done = live.remove(random.nextInt(live.size()));
          join(queue.release(done.requestId(), done.attempt(), null));
        }
        if (random.nextInt(5) == 0) {
          join(queue.reportLoad("w" + (1 + random.nextInt(4)),
              List.of(new RankReport(0, random.nextInt(100), random.nextInt(500), 0)), null));
        }
        SelectionRequest request = new SelectionRequest(queue.model(), "", null, 1 + random.nextInt(4000), 0,
            null, null, null, 0, random.nextBoolean() ? 0.8 : null, null, null);
        SelectionView view = queue.view();
        PickerState saved = view.picker().state();
        SelectionResult inline = queue.selectWithoutAdmission(request);
        view.picker().restore(saved);
        SelectionResult onActor = join(queue.selectWithoutAdmissionOnActor(request));
        assertThat(inline.rank()).as("%s round %d", policy, round).isEqualTo(onActor.rank());
        assertThat(inline.cost()).isEqualTo(onActor.cost());
        assertThat(inline.viewVersion()).isEqualTo(onActor.viewVersion());
      }
    }
  }

  /**
   * 256 concurrent advisory selections next to concurrent Books and Releases all succeed; at quiescent points each
   * rank's in-flight equals its live bookings, and at the end nothing is booked and every cell is zero.
   */
  @Test
  void concurrentSelectionsNextToBookingsKeepTheInvariants() throws Exception {
    SchedulerQueue queue = cluster.modelWithWorkers("concurrent", "least_in_flight", "a", "b", "c", "d");
    ExecutorService pool = Executors.newFixedThreadPool(8);
    AtomicInteger selections = new AtomicInteger();
    List<CompletableFuture<Void>> selectors = new ArrayList<>();
    for (int caller = 0; caller < 256; caller++) {
      selectors.add(CompletableFuture.runAsync(() -> {
        for (int i = 0; i < 40; i++) {
          SelectionResult result = queue.selectWithoutAdmission(SelectionRequest.of("concurrent", "", 128));
          assertThat(result.rank().workerId()).isIn("a", "b", "c", "d");
          selections.incrementAndGet();
        }
      }, pool));
    }
    for (int phase = 0; phase < 8; phase++) {
      List<CompletableFuture<BookingAnswer>> books = new ArrayList<>();
      for (int i = 0; i < 24; i++) {
        books.add(queue.book(SelectionRequest.of("concurrent", "p" + phase + "-" + i, 128), null));
      }
      List<BookingAnswer> booked = new ArrayList<>();
      for (CompletableFuture<BookingAnswer> f : books) {
        booked.add(f.get(5, TimeUnit.SECONDS));
      }
      assertQuiescentInvariant(queue, 24);
      List<CompletableFuture<?>> releases = new ArrayList<>();
      for (BookingAnswer b : booked) {
        releases.add(queue.release(b.requestId(), b.attempt(), null).toCompletableFuture());
      }
      CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new)).get(5, TimeUnit.SECONDS);
      assertQuiescentInvariant(queue, 0);
    }
    CompletableFuture.allOf(selectors.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    pool.shutdown();
    assertThat(selections.get()).isEqualTo(256 * 40);
    ModelSnapshot end = cluster.state(queue);
    assertThat(end.bookings()).isEmpty();
    assertThat(end.pending()).isZero();
    for (ModelSnapshot.WorkerSnapshot w : end.workers()) {
      RankLoad load = w.ranks().get(0).load();
      assertThat(List.of(load.inFlight(), load.prefillTokens(), load.decodeBlocks())).containsOnly(0L, 0);
    }
    SelectionView view = queue.view();
    for (int i = 0; i < view.rankCount(); i++) {
      assertThat(view.cell(i).booked().inFlight()).isZero();
    }
  }

  private static void assertQuiescentInvariant(SchedulerQueue queue, int expectedBookings) {
    ModelSnapshot state = cluster.state(queue);
    assertThat(state.bookings()).hasSize(expectedBookings);
    for (ModelSnapshot.WorkerSnapshot w : state.workers()) {
      for (ModelSnapshot.RankSnapshot r : w.ranks()) {
        assertThat(r.load().inFlight()).as("rank %s#%d", w.config().workerId(), r.dpRank())
            .isEqualTo(r.liveBookings());
      }
    }
  }

  @Test
  void leastInFlightBooksSplitEvenlyAndLeaveNothingBehind() throws Exception {
    SchedulerQueue queue = cluster.modelWithWorkers("split", "least_in_flight", "a", "b", "c", "d");
    ExecutorService threads = Executors.newFixedThreadPool(4);
    Map<String, AtomicInteger> perWorker = new ConcurrentHashMap<>();
    List<BookingAnswer> booked = java.util.Collections.synchronizedList(new ArrayList<>());
    List<CompletableFuture<Void>> callers = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      int thread = t;
      callers.add(CompletableFuture.runAsync(() -> {
        for (int i = 0; i < 16; i++) {
          BookingAnswer answer = join(queue.book(SelectionRequest.of("split", "t" + thread + "-" + i, 32), null));
          perWorker.computeIfAbsent(answer.selection().rank().workerId(), k -> new AtomicInteger()).incrementAndGet();
          booked.add(answer);
        }
      }, threads));
    }
    CompletableFuture.allOf(callers.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
    threads.shutdown();
    Map<String, Integer> counts = new HashMap<>();
    perWorker.forEach((k, v) -> counts.put(k, v.get()));
    assertThat(counts).containsExactlyInAnyOrderEntriesOf(Map.of("a", 16, "b", 16, "c", 16, "d", 16));
    for (BookingAnswer b : booked) {
      assertThat(join(queue.release(b.requestId(), b.attempt(), null)).applied()).isTrue();
    }
    ModelSnapshot state = cluster.state(queue);
    assertThat(state.pending()).isZero();
    assertThat(state.bookings()).isEmpty();
  }

  @Test
  void aLeaseExpiresABookingNeverReleased() {
    SchedulerQueue queue = cluster.modelWithWorkers("lease", "round_robin", "a");
    BookingAnswer booked = book(queue, "forgotten");
    assertThat(cluster.state(queue).bookings()).hasSize(1);
    clock.advance(Duration.ofSeconds(301));
    // the actor's expiry timer (100 ms in tests) sees the advanced clock; nothing sleeps for the lease itself
    await().atMost(Duration.ofSeconds(5)).until(() -> cluster.state(queue).bookings().isEmpty());
    assertThat(cluster.state(queue).expiredBookings()).isEqualTo(1);
    assertThat(join(queue.release("forgotten", booked.attempt(), null)).applied()).isFalse();
  }

  @Test
  void aBookWhoseDeadlinePassesInTheQueueLeavesNothingBehind() {
    SchedulerQueue queue = cluster.modelWithWorkers("deadline", "round_robin", "a");
    join(queue.setPolicy(null, Map.of("queue_threshold_frac", "0"), null));
    BookingAnswer holder = book(queue, "holder");
    CompletableFuture<BookingAnswer> waiting =
        queue.book(SelectionRequest.of("deadline", "late", 64), Duration.ofMillis(300));
    assertThatThrownBy(() -> waiting.get(5, TimeUnit.SECONDS)).cause()
        .isInstanceOfSatisfying(RoutingException.class,
            e -> assertThat(e.error().code()).isEqualTo(RoutingError.Code.DEADLINE_EXCEEDED));
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      ModelSnapshot state = cluster.state(queue);
      assertThat(state.pending()).isZero();
      assertThat(state.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId).containsExactly("holder");
    });
    assertThat(join(queue.release("holder", holder.attempt(), null)).applied()).isTrue();
  }

  @Test
  void aCancelledBookIsUndone() {
    SchedulerQueue queue = cluster.modelWithWorkers("cancelled", "round_robin", "a");
    join(queue.setPolicy(null, Map.of("queue_threshold_frac", "0"), null));
    BookingAnswer holder = book(queue, "holder");
    CompletableFuture<BookingAnswer> waiting = queue.book(SelectionRequest.of("cancelled", "gave-up", 64), null);
    await().atMost(Duration.ofSeconds(5)).until(() -> cluster.state(queue).pending() == 1);
    waiting.cancel(true);
    await().atMost(Duration.ofSeconds(5)).until(() -> cluster.state(queue).pending() == 0);
    assertThat(join(queue.release("holder", holder.attempt(), null)).applied()).isTrue();
    assertThat(cluster.state(queue).bookings()).isEmpty();
  }

  @Test
  void unknownModelsAreRejectedWithoutStartingAnActor() {
    SchedulerQueue queue = cluster.queue("nobody");
    assertThatThrownBy(() -> queue.selectWithoutAdmission(SelectionRequest.of("nobody", "", 5)))
        .isInstanceOfSatisfying(RoutingException.class,
            e -> assertThat(e.error().reason()).isEqualTo(RoutingError.UNKNOWN_MODEL));
    assertThatThrownBy(() -> queue.book(SelectionRequest.of("nobody", "r", 5), null).join())
        .isInstanceOf(CompletionException.class).cause().isInstanceOf(RoutingException.class);
    assertThat(join(queue.release("r", 1, null)).applied()).isFalse();
    assertThat(cluster.routing.models()).doesNotContain("nobody");
  }
}
