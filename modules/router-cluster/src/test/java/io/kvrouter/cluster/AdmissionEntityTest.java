package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.AdmissionConfig;
import io.kvrouter.cluster.admission.BookCall;
import io.kvrouter.cluster.admission.ModelClient;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.policy.Policy;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.LedgerInvariants;
import io.kvrouter.core.testkit.Requests;
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

  private static BookingAnswer book(ModelClient client, String requestId) {
    return join(client.book(Requests.of(client.model(), requestId, 64), null));
  }

  /**
   * The inline pick (the facade's Select on this thread) and the actor's picks agree for the same request, loads and
   * picker state: from the same picker state (the policy re-seeded through SetPolicy before each path, which starts
   * its picker at pick 0), the inline Select, the actor's advisory pick (through its mailbox, via the test probe) and
   * the actor's real Book of that request must choose the same worker and rank, at the same cost, each on the view
   * then current. The Books move the state from round to round, with random Releases and engine load reports in
   * between. Every policy, plus kv with a softmax temperature, 120 requests in sequence each.
   */
  @Test
  void theInlinePickEqualsTheActorsPickAndBookForTheSameViewAndPickerState() {
    Map<String, Map<String, String>> policies = new java.util.LinkedHashMap<>();
    for (Policy policy : Policy.values()) {
      policies.put(policy.wireName(), Map.of());
    }
    policies.put("kv-softmax", Map.of("temperature", "0.7"));
    Random random = new Random(3);
    policies.forEach((name, parameters) -> {
      ModelClient client = cluster.modelWithWorkers("parity-" + name, "round_robin", "w1", "w2", "w3", "w4");
      join(client.register(new io.kvrouter.core.model.WorkerConfig("w5", 0, 2, 8192, 1000, 16, "", "", null), null));
      join(client.setPolicy(name.startsWith("kv") ? "kv" : name, parameters, null));
      List<BookingAnswer> live = new ArrayList<>();
      for (int round = 0; round < 120; round++) {
        if (!live.isEmpty() && random.nextInt(3) == 0) {
          BookingAnswer done = live.remove(random.nextInt(live.size()));
          join(client.release(done.requestId(), done.attempt(), null));
        }
        if (random.nextInt(5) == 0) {
          join(client.reportLoad("w" + (1 + random.nextInt(4)),
              List.of(new RankReport(0, random.nextInt(100), random.nextInt(500), 0)), null));
        }
        SelectionRequest request = new SelectionRequest(client.model(), "p" + round, null, 1 + random.nextInt(4000),
            0, null, null, null, 0, random.nextBoolean() ? 0.8 : null, null, null);
        SelectionView view = reseeded(client);
        SelectionResult inline = client.selectWithoutAdmission(request);
        // read on the thread that picked: a lock-free picker's state is exact only there (it claims pick numbers
        // in per-thread chunks)
        assertThat(view.picker().state().picks()).as("the inline Select took one pick").isEqualTo(1);
        assertThat(inline.viewVersion()).isEqualTo(view.version());
        SelectionView actorView = reseeded(client);
        SelectionResult onActor = cluster.selectOnActor(request);
        assertThat(onActor.viewVersion()).isEqualTo(actorView.version());
        SelectionView bookView = reseeded(client);
        BookingAnswer booked = join(client.book(request, null));
        assertThat(booked.selection().viewVersion()).isEqualTo(bookView.version());
        live.add(booked);
        for (SelectionResult actor : List.of(onActor, booked.selection())) {
          assertThat(actor.rank()).as("%s round %d", name, round).isEqualTo(inline.rank());
          assertThat(actor.cost()).isEqualTo(inline.cost());
        }
      }
    });
  }

  /**
   * Re-seeds the model's picker through SetPolicy (seed 12, then 11: a changed policy config makes a new picker at
   * pick 0); returns the view that picker is in. Loads live in the cells every view of the incarnation shares, so
   * views made this way differ from each other only in their version.
   */
  private SelectionView reseeded(ModelClient client) {
    join(client.setPolicy(null, Map.of("seed", "12"), null));
    join(client.setPolicy(null, Map.of("seed", "11"), null));
    SelectionView view = cluster.client(client.model()).view();
    assertThat(view.picker().state()).isEqualTo(new PickerState(11, 0));
    return view;
  }

  /**
   * 256 concurrent advisory selections next to concurrent Books and Releases all succeed; at quiescent points each
   * rank's in-flight equals its live bookings, and at the end nothing is booked and every cell is zero.
   */
  @Test
  void concurrentSelectionsNextToBookingsKeepTheInvariants() throws Exception {
    ModelClient client = cluster.modelWithWorkers("concurrent", "least_in_flight", "a", "b", "c", "d");
    ExecutorService pool = Executors.newFixedThreadPool(8);
    AtomicInteger selections = new AtomicInteger();
    List<CompletableFuture<Void>> selectors = new ArrayList<>();
    for (int caller = 0; caller < 256; caller++) {
      selectors.add(CompletableFuture.runAsync(() -> {
        for (int i = 0; i < 40; i++) {
          SelectionResult result = client.selectWithoutAdmission(Requests.of("concurrent", "", 128));
          assertThat(result.rank().workerId()).isIn("a", "b", "c", "d");
          selections.incrementAndGet();
        }
      }, pool));
    }
    for (int phase = 0; phase < 8; phase++) {
      List<CompletableFuture<BookingAnswer>> books = new ArrayList<>();
      for (int i = 0; i < 24; i++) {
        books.add(client.book(Requests.of("concurrent", "p" + phase + "-" + i, 128), null));
      }
      List<BookingAnswer> booked = new ArrayList<>();
      for (CompletableFuture<BookingAnswer> f : books) {
        booked.add(f.get(5, TimeUnit.SECONDS));
      }
      assertQuiescentInvariant(client, 24);
      List<CompletableFuture<?>> releases = new ArrayList<>();
      for (BookingAnswer b : booked) {
        releases.add(client.release(b.requestId(), b.attempt(), null).toCompletableFuture());
      }
      CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new)).get(5, TimeUnit.SECONDS);
      assertQuiescentInvariant(client, 0);
    }
    CompletableFuture.allOf(selectors.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    pool.shutdown();
    assertThat(selections.get()).isEqualTo(256 * 40);
    ModelSnapshot end = cluster.state(client);
    assertThat(end.bookings()).isEmpty();
    assertThat(end.pending()).isZero();
    for (ModelSnapshot.WorkerSnapshot w : end.workers()) {
      RankLoad load = w.ranks().get(0).load();
      assertThat(List.of(load.inFlight(), load.prefillTokens(), load.decodeBlocks())).containsOnly(0L, 0);
    }
    SelectionView view = client.view();
    for (int i = 0; i < view.rankCount(); i++) {
      assertThat(view.cell(i).booked().inFlight()).isZero();
    }
  }

  private static void assertQuiescentInvariant(ModelClient client, int expectedBookings) {
    ModelSnapshot state = cluster.state(client);
    assertThat(state.bookings()).hasSize(expectedBookings);
    assertThat(LedgerInvariants.firstMismatch(state)).isNull();
  }

  @Test
  void leastInFlightBooksSplitEvenlyAndLeaveNothingBehind() throws Exception {
    ModelClient client = cluster.modelWithWorkers("split", "least_in_flight", "a", "b", "c", "d");
    ExecutorService threads = Executors.newFixedThreadPool(4);
    Map<String, AtomicInteger> perWorker = new ConcurrentHashMap<>();
    List<BookingAnswer> booked = java.util.Collections.synchronizedList(new ArrayList<>());
    List<CompletableFuture<Void>> callers = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      int thread = t;
      callers.add(CompletableFuture.runAsync(() -> {
        for (int i = 0; i < 16; i++) {
          BookingAnswer answer = join(client.book(Requests.of("split", "t" + thread + "-" + i, 32), null));
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
      assertThat(join(client.release(b.requestId(), b.attempt(), null)).applied()).isTrue();
    }
    ModelSnapshot state = cluster.state(client);
    assertThat(state.pending()).isZero();
    assertThat(state.bookings()).isEmpty();
  }

  @Test
  void aLeaseExpiresABookingNeverReleased() {
    ModelClient client = cluster.modelWithWorkers("lease", "round_robin", "a");
    BookingAnswer booked = book(client, "forgotten");
    assertThat(cluster.state(client).bookings()).hasSize(1);
    clock.advance(Duration.ofSeconds(301));
    // the actor's expiry timer (100 ms in tests) sees the advanced clock; nothing sleeps for the lease itself
    await().atMost(Duration.ofSeconds(5)).until(() -> cluster.state(client).bookings().isEmpty());
    assertThat(cluster.state(client).expiredBookings()).isEqualTo(1);
    assertThat(join(client.release("forgotten", booked.attempt(), null)).applied()).isFalse();
  }

  @Test
  void aBookWhoseDeadlinePassesInTheQueueLeavesNothingBehind() {
    ModelClient client = cluster.modelWithWorkers("deadline", "round_robin", "a");
    join(client.setPolicy(null, Map.of("queue_threshold_frac", "0"), null));
    BookingAnswer holder = book(client, "holder");
    CompletableFuture<BookingAnswer> waiting =
        client.book(Requests.of("deadline", "late", 64), Duration.ofMillis(300));
    assertThatThrownBy(() -> waiting.get(5, TimeUnit.SECONDS)).cause()
        .isInstanceOfSatisfying(RoutingException.class,
            e -> assertThat(e.error().code()).isEqualTo(RoutingError.Code.DEADLINE_EXCEEDED));
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      ModelSnapshot state = cluster.state(client);
      assertThat(state.pending()).isZero();
      assertThat(state.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId).containsExactly("holder");
    });
    assertThat(join(client.release("holder", holder.attempt(), null)).applied()).isTrue();
  }

  /** A caller with no more time left than the deadline margin has given up already: no ask, nothing booked. */
  @Test
  void aBookWithNoTimeBeyondTheMarginIsRejectedUpFront() {
    ModelClient client = cluster.modelWithWorkers("too-short", "round_robin", "a");
    long version = cluster.state(client).viewVersion();
    for (Duration remaining : List.of(Duration.ZERO, Duration.ofMillis(1), AdmissionConfig.fromConfig(cluster.kit.system().settings().config()).deadlineMargin())) {
      assertThatThrownBy(() -> client.book(Requests.of("too-short", "late-" + remaining.toMillis(), 64), remaining)
          .get(5, TimeUnit.SECONDS)).cause()
          .isInstanceOfSatisfying(RoutingException.class, e -> {
            assertThat(e.error().code()).isEqualTo(RoutingError.Code.DEADLINE_EXCEEDED);
            assertThat(e.error().reason()).isEqualTo(RoutingError.DEADLINE_TOO_SHORT);
          });
    }
    // a Book sent after them is booked, and is the only booking: the rejected ones never reached the actor
    book(client, "in-time");
    ModelSnapshot state = cluster.state(client);
    assertThat(state.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId).containsExactly("in-time");
    assertThat(state.viewVersion()).isEqualTo(version);
  }

  /**
   * The binding learned that the call was cancelled after the Book was answered but before the answer was written:
   * abandoning the answered Book frees its booking (cancelling a completed future would do nothing).
   */
  @Test
  void abandoningAnAnsweredBookFreesItsBooking() {
    ModelClient client = cluster.modelWithWorkers("abandoned", "round_robin", "a");
    BookCall call = client.book(Requests.of("abandoned", "answered", 64), null);
    assertThat(join(call).requestId()).isEqualTo("answered");
    call.abandon();
    await().atMost(Duration.ofSeconds(5)).until(() -> cluster.state(client).bookings().isEmpty());
  }

  @Test
  void aCancelledBookIsUndone() {
    ModelClient client = cluster.modelWithWorkers("cancelled", "round_robin", "a");
    join(client.setPolicy(null, Map.of("queue_threshold_frac", "0"), null));
    BookingAnswer holder = book(client, "holder");
    CompletableFuture<BookingAnswer> waiting = client.book(Requests.of("cancelled", "gave-up", 64), null);
    await().atMost(Duration.ofSeconds(5)).until(() -> cluster.state(client).pending() == 1);
    waiting.cancel(true);
    await().atMost(Duration.ofSeconds(5)).until(() -> cluster.state(client).pending() == 0);
    assertThat(join(client.release("holder", holder.attempt(), null)).applied()).isTrue();
    assertThat(cluster.state(client).bookings()).isEmpty();
  }

  @Test
  void unknownModelsAreRejectedWithoutStartingAnActor() {
    ModelClient client = cluster.client("nobody");
    assertThatThrownBy(() -> client.selectWithoutAdmission(Requests.of("nobody", "", 5)))
        .isInstanceOfSatisfying(RoutingException.class,
            e -> assertThat(e.error().reason()).isEqualTo(RoutingError.UNKNOWN_MODEL));
    assertThatThrownBy(() -> client.book(Requests.of("nobody", "r", 5), null).join())
        .isInstanceOf(CompletionException.class).cause().isInstanceOf(RoutingException.class);
    assertThat(join(client.release("r", 1, null)).applied()).isFalse();
    assertThat(cluster.routing.models()).doesNotContain("nobody");
  }
}
