package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.QueueClassState;
import io.kvrouter.api.v1.RankState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The admission queue under a bounded load over real gRPC (grpc-java's client, netty binding, a node started with
 * {@code Main.init}): 256 concurrent clients for 30 s (at most 400 Books each), each Booking, marking prefill done
 * and releasing in a loop, with queueing on (8 workers, a rank busy above 2,048 prefill tokens, three classes, strict
 * tiers, aging), 20 % of the Books with a short deadline (60–200 ms) and 10 % cancelled 0–30 ms after they are sent.
 * A client whose call ended without the router's answer (it cancelled, or its own deadline fired first) does what
 * router.proto asks of such a client: it replays the Book by its request id and releases what it gets; a replay that
 * finds the booking still live is a cancel that crossed the answer on the wire after the router's late-cancel window
 * (counted and printed). At the end: every Book was answered exactly once (each call completed, once), only with the
 * statuses this load can cause; every Book that entered the queue left it once (per class, queued = booked from the
 * queue + the ways out); no live booking, no queued entry and no load is left.
 */
class AdmissionLoadTest {
  private static final String MODEL = "load/queue";
  private static final int CLIENTS = 256;
  private static final int WORKERS = 8;
  private static final Duration RUN = Duration.ofSeconds(30);
  private static final int MAX_BOOKS_PER_CLIENT = 400;
  private static final Set<Status.Code> EXPECTED = Set.of(Status.Code.OK, Status.Code.DEADLINE_EXCEEDED,
      Status.Code.CANCELLED, Status.Code.RESOURCE_EXHAUSTED);
  /** The ways a queued Book leaves the queue without being booked from it. */
  private static final Set<String> EXITS = Set.of("CANCELLED", "QUEUE_DEADLINE_EXCEEDED", "SUPERSEDED",
      "SELECTION_FAILED", "RECOVERING");

  /** What the clients saw. */
  private static final class Tally {
    final AtomicLong sent = new AtomicLong();
    final AtomicLong answered = new AtomicLong();
    final AtomicLong answeredTwice = new AtomicLong();
    final Map<String, AtomicLong> outcomes = new ConcurrentHashMap<>();
    final AtomicLong released = new AtomicLong();
    final AtomicLong queued = new AtomicLong();
    /** Replays after giving up, and those that found the booking still live. */
    final AtomicLong replays = new AtomicLong();
    final AtomicLong liveAfterGivingUp = new AtomicLong();
    /** Each request id's outcome (and what its release answered), to tell what a leftover booking was. */
    final Map<String, String> byRequest = new ConcurrentHashMap<>();

    void outcome(String requestId, String what) {
      outcomes.computeIfAbsent(what, k -> new AtomicLong()).incrementAndGet();
      byRequest.merge(requestId, what, (a, b) -> a + " | " + b);
    }
  }

  @Test
  void twoHundredFiftySixClientsForThirtySecondsLeaveNothingBehind() throws Exception {
    try (TestRouter router = TestRouter.start("kvrouter.admission.expiry-interval = 200ms")) {
      for (int i = 0; i < WORKERS; i++) {
        join(router.workers.register(worker(MODEL, "w" + i).build()));
      }
      join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("kv")
          .putParameters("queue_prefill_tokens_threshold", "2048")
          .putParameters("queue_aging_ms", "2000")
          .putParameters("max_pending", "4096")
          .putParameters("class.gold", "quantum=4096,queue_policy=wspt")
          .putParameters("class.silver", "quantum=1024,requests_per_worker=8")
          .build()));
      ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", router.node.grpcPort())
          .usePlaintext().build();
      ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
      Tally tally = new Tally();
      long stopAt = System.nanoTime() + RUN.toNanos();
      try {
        RouterGrpc.RouterFutureStub stub = RouterGrpc.newFutureStub(channel);
        List<CompletableFuture<Void>> clients = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
          CompletableFuture<Void> done = new CompletableFuture<>();
          clients.add(done);
          new Client(c, stub, timers, tally, stopAt, done).next();
        }
        CompletableFuture.allOf(clients.toArray(CompletableFuture[]::new))
            .get(RUN.toSeconds() + 30, TimeUnit.SECONDS);
      } finally {
        timers.shutdownNow();
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      System.out.printf("queue load: %d Books, %d queued at least once, %d released, outcomes %s; %d replays after "
          + "giving up, %d of them found the booking live%n", tally.sent.get(), tally.queued.get(),
          tally.released.get(), new TreeMap<>(tally.outcomes), tally.replays.get(), tally.liveAfterGivingUp.get());

      assertThat(tally.answered.get()).as("every Book answered").isEqualTo(tally.sent.get());
      assertThat(tally.answeredTwice.get()).as("answered twice").isZero();
      assertThat(tally.outcomes.keySet()).allSatisfy(outcome -> assertThat(EXPECTED)
          .contains(Status.Code.valueOf(outcome.split(" ")[0])));
      assertThat(tally.outcomes.get("OK").get()).as("Books booked").isGreaterThan(1000);
      assertThat(tally.queued.get()).as("Books that waited").isGreaterThan(100);
      assertThat(tally.outcomes).containsKey("CANCELLED");
      assertThat(tally.outcomes.keySet()).anyMatch(outcome -> outcome.startsWith("DEADLINE_EXCEEDED"));

      // nothing left: the cancels and deadlines reached admission (late cancels within the window free bookings)
      await().atMost(Duration.ofSeconds(10)).ignoreExceptions().untilAsserted(() -> {
        ModelState state = router.state(MODEL);
        assertThat(state.getBookingsList()).as("live bookings left, as their clients saw them: %s",
            state.getBookingsList().stream().map(b -> b.getRequestId() + " prefill done " + b.getPrefillDone() + ": "
                + tally.byRequest.get(b.getRequestId())).toList()).isEmpty();
        assertThat(state.getPending()).as("queued Books left: %s", state.getQueue().getWaitingList()).isZero();
      });
      ModelState end = router.state(MODEL);
      for (WorkerState w : end.getWorkersList()) {
        for (RankState r : w.getRanksList()) {
          assertThat(r.getLoad().getInFlight()).isZero();
          assertThat(r.getLoad().getPrefillTokens()).isZero();
          assertThat(r.getLoad().getDecodeBlocks()).isZero();
        }
      }
      long enqueued = 0;
      for (QueueClassState c : end.getQueue().getClassesList()) {
        long exits = c.getRejectionsMap().entrySet().stream().filter(e -> EXITS.contains(e.getKey()))
            .mapToLong(Map.Entry::getValue).sum();
        assertThat(c.getEnqueued()).as("class %s: each queued Book left once (%s)", c.getName(), c)
            .isEqualTo(c.getDispatched() + exits);
        assertThat(c.getDepth()).isZero();
        enqueued += c.getEnqueued();
      }
      assertThat(enqueued).isPositive();
    }
  }

  /** One client: Book, hold the prefill, MarkPrefillDone, hold the decode, Release; again until the run ends. */
  private static final class Client {
    private final int id;
    private final RouterGrpc.RouterFutureStub stub;
    private final ScheduledExecutorService timers;
    private final Tally tally;
    private final long stopAt;
    private final CompletableFuture<Void> done;
    private final SplittableRandom random;
    private int books;

    Client(int id, RouterGrpc.RouterFutureStub stub, ScheduledExecutorService timers, Tally tally, long stopAt,
        CompletableFuture<Void> done) {
      this.id = id;
      this.stub = stub;
      this.timers = timers;
      this.tally = tally;
      this.stopAt = stopAt;
      this.done = done;
      this.random = new SplittableRandom(id);
    }

    void next() {
      if (System.nanoTime() >= stopAt || books >= MAX_BOOKS_PER_CLIENT) {
        done.complete(null);
        return;
      }
      String requestId = "c" + id + "-" + books++;
      int pick = random.nextInt(3);
      RouteRequest request = RouteRequest.newBuilder().setModel(MODEL).setRequestId(requestId)
          .setIslTokens(256 + random.nextInt(3840))
          .setPolicyClass(pick == 0 ? "gold" : pick == 1 ? "silver" : "")
          .setStrictPriority(random.nextInt(4) == 0 ? 1 : 0)
          .setPriority(random.nextInt(3))
          .build();
      boolean shortDeadline = random.nextInt(5) == 0;
      boolean cancel = random.nextInt(10) == 0;
      long deadlineMillis = shortDeadline ? 60 + random.nextInt(140) : 10_000;
      ListenableFuture<Booking> call = stub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS).book(request);
      tally.sent.incrementAndGet();
      if (cancel) {
        timers.schedule(() -> call.cancel(true), random.nextInt(31), TimeUnit.MILLISECONDS);
      }
      AtomicInteger answers = new AtomicInteger();
      Futures.addCallback(call, new FutureCallback<>() {
        @Override
        public void onSuccess(Booking booking) {
          answered(answers);
          tally.outcome(requestId, "OK");
          if (booking.getQueuedMicros() > 0) {
            tally.queued.incrementAndGet();
          }
          serve(requestId, booking);
        }

        @Override
        public void onFailure(Throwable failure) {
          answered(answers);
          boolean withoutAnswer;
          if (failure instanceof java.util.concurrent.CancellationException) {
            tally.outcome(requestId, "CANCELLED"); // the client cancelled the future: grpc-java cancels the call
            withoutAnswer = true;
          } else {
            Status status = Status.fromThrowable(failure);
            String reason = ReasonTrailer.of(Status.trailersFromThrowable(failure));
            tally.outcome(requestId, status.getCode() + (reason == null ? "" : " " + reason));
            withoutAnswer = reason == null; // the client's own deadline: the router's answer never reached it
          }
          if (withoutAnswer) {
            timers.schedule(() -> replay(request), 1, TimeUnit.MILLISECONDS);
          } else {
            timers.schedule(Client.this::next, 1, TimeUnit.MILLISECONDS);
          }
        }
      }, MoreExecutors.directExecutor());
    }

    /** The Book again by its request id, as a client that gave up must: what it gets is then served and released. */
    private void replay(RouteRequest request) {
      tally.replays.incrementAndGet();
      Futures.addCallback(stub.withDeadlineAfter(10, TimeUnit.SECONDS).book(request), new FutureCallback<>() {
        @Override
        public void onSuccess(Booking booking) {
          if (booking.getReplay()) {
            tally.liveAfterGivingUp.incrementAndGet();
          }
          tally.byRequest.merge(request.getRequestId(), "replayed " + booking.getReplay(), (a, b) -> a + " | " + b);
          serve(request.getRequestId(), booking);
        }

        @Override
        public void onFailure(Throwable t) {
          tally.byRequest.merge(request.getRequestId(), "replay failed " + Status.fromThrowable(t),
              (a, b) -> a + " | " + b);
          next();
        }
      }, MoreExecutors.directExecutor());
    }

    /** Holds the prefill, marks it done, holds the decode, releases; then the next Book. */
    private void serve(String requestId, Booking booking) {
      BookingRef ref = BookingRef.newBuilder().setModel(MODEL).setRequestId(requestId)
          .setAttempt(booking.getAttempt()).build();
      timers.schedule(() -> Futures.addCallback(stub.withDeadlineAfter(10, TimeUnit.SECONDS).markPrefillDone(ref),
          then(() -> timers.schedule(() -> release(ref), 2 + random.nextInt(10), TimeUnit.MILLISECONDS)),
          MoreExecutors.directExecutor()), 2 + random.nextInt(10), TimeUnit.MILLISECONDS);
    }

    private void answered(AtomicInteger answers) {
      if (answers.incrementAndGet() == 1) {
        tally.answered.incrementAndGet();
      } else {
        tally.answeredTwice.incrementAndGet();
      }
    }

    private void release(BookingRef ref) {
      Futures.addCallback(stub.withDeadlineAfter(10, TimeUnit.SECONDS).release(ref), new FutureCallback<>() {
        @Override
        public void onSuccess(io.kvrouter.api.v1.Released released) {
          tally.released.incrementAndGet();
          tally.byRequest.merge(ref.getRequestId(), "released " + released.getApplied(), (a, b) -> a + " | " + b);
          next();
        }

        @Override
        public void onFailure(Throwable t) {
          tally.byRequest.merge(ref.getRequestId(), "release failed " + Status.fromThrowable(t), (a, b) -> a + " | " + b);
          next();
        }
      }, MoreExecutors.directExecutor());
    }

    /** Runs {@code next} once the call is answered, whatever the answer. */
    private static <T> FutureCallback<T> then(Runnable next) {
      return new FutureCallback<>() {
        @Override
        public void onSuccess(T result) {
          next.run();
        }

        @Override
        public void onFailure(Throwable t) {
          next.run();
        }
      };
    }
  }
}
