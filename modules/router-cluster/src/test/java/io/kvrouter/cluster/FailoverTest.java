package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The node hosting a model's admission actor dies (its system terminates without leaving; a survivor downs it) under a
 * bounded Book/Release load through the two other nodes, while the workers keep reporting load. Sharding restarts the
 * actor on a survivor at once (the survivors wake it), and the new incarnation recovers the freshest replica: every
 * Book is answered, bookings acknowledged well before the kill are still live and released through either survivor,
 * a Book whose answer was lost is replayed by its request id and released, and at the end nothing is booked anywhere.
 */
class FailoverTest {
  private static final String[] WORKERS = {"w1", "w2", "w3", "w4"};
  private static final int KEPT = 40;
  private static final int LOOP_BOOKS = 150;
  private static final Duration LOOP_TIME = Duration.ofSeconds(25);
  /**
   * Past the replication interval (2 ms) by the time a delta takes to reach a peer on a loaded host: releases answered
   * earlier than this before the kill must stay applied.
   */
  private static final Duration WINDOW = Duration.ofMillis(300);
  /**
   * A downed node is removed only once the others found it unreachable: failure detection shortened so that takes
   * about a second rather than several.
   */
  private static final String FAST_FAILURE_DETECTION = """
      pekko.cluster.failure-detector.heartbeat-interval = 300ms
      pekko.cluster.failure-detector.acceptable-heartbeat-pause = 1s
      """;

  @Test
  void theOldestNodeHostingTheActorDies() throws Exception {
    failover(0);
  }

  @Test
  void aNodeThatIsNotTheOldestHostingTheActorDies() throws Exception {
    failover(1);
  }

  private record Released(BookingAnswer booking, long atNanos) {}

  /** No client sends anything after the kill: the survivors' Wake restarts the actor, which recovers the booking. */
  @Test
  void anIdleModelIsRestartedOnASurvivorWithoutTraffic() {
    try (TestRegion region = TestRegion.start(3, FAST_FAILURE_DETECTION)) {
      TestRegion.Node victim = region.node(2);
      TestRegion.Node survivor = region.node(0);
      String model = Hosting.modelHostedOn(victim, survivor, "idle", WORKERS);
      BookingAnswer kept = join(survivor.client(model).book(Requests.of(model, "kept", 64), null));
      await().atMost(TestRegion.TIMEOUT).until(() -> inFlightSeenBy(region.node(1), model) == 1);

      region.kill(victim);
      await().atMost(Duration.ofSeconds(20)).until(() -> region.live().stream()
          .anyMatch(node -> Hosting.localAdmission(node, model) != null));
      assertThat(join(region.node(1).client(model).release("kept", kept.attempt(), null)).applied()).isTrue();
    }
  }

  /** What one load loop saw: every Book's outcome, and the request ids whose answer or release was lost. */
  private static final class LoopLog {
    final AtomicInteger booked = new AtomicInteger();
    final AtomicInteger rejected = new AtomicInteger();
    final List<String> lostAnswers = new ArrayList<>();
    final List<BookingAnswer> unreleased = new ArrayList<>();
    /** Releases answered applied, with when (System.nanoTime) the answer came. */
    final List<Released> released = new ArrayList<>();
    final List<Throwable> unclear = new ArrayList<>();

    @Override
    public String toString() {
      return "booked " + booked + ", rejected " + rejected + ", answers lost " + lostAnswers + ", releases lost "
          + unreleased.stream().map(b -> b.requestId() + "@" + b.attempt()).toList();
    }
  }

  private void failover(int victimIndex) throws Exception {
    try (TestRegion region = TestRegion.start(3, FAST_FAILURE_DETECTION + "kvrouter.admission.ask-timeout = 2s")) {
      TestRegion.Node victim = region.node(victimIndex);
      List<TestRegion.Node> survivors = region.live().stream().filter(n -> n != victim).toList();
      TestRegion.Node a = survivors.get(0);
      TestRegion.Node b = survivors.get(1);
      String model = Hosting.modelHostedOn(victim, a, "failover", WORKERS);
      // Books go through both survivors: b must have every worker in its view first (replication brings it)
      await().atMost(TestRegion.TIMEOUT).until(() -> survivors.stream().allMatch(node -> node.view(model) != null
          && node.view(model).workers().keySet().containsAll(List.of(WORKERS))));
      long epochBefore = join(a.client(model).snapshot(null)).epoch();

      ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor();
      var loops = Executors.newFixedThreadPool(2);
      try {
        // the engines keep reporting load (their heartbeat), through a survivor
        reporter.scheduleAtFixedRate(() -> {
          for (String id : WORKERS) {
            b.client(model).reportLoad(id, List.of(new RankReport(0, 0, 0, 0)), null);
          }
        }, 0, 100, TimeUnit.MILLISECONDS);

        // bookings acknowledged well before the kill: the survivors' views show all of them
        List<BookingAnswer> kept = new ArrayList<>();
        for (int i = 0; i < KEPT; i++) {
          TestRegion.Node via = i % 2 == 0 ? a : b;
          kept.add(join(via.client(model).book(Requests.of(model, "kept-" + i, 64), null)));
        }
        await().atMost(TestRegion.TIMEOUT).until(() -> inFlightSeenBy(a, model) == KEPT
            && inFlightSeenBy(b, model) == KEPT);

        // Book/Release pairs through both survivors, across the kill
        AtomicInteger started = new AtomicInteger();
        LoopLog[] logs = {new LoopLog(), new LoopLog()};
        List<CompletableFuture<Void>> running = new ArrayList<>();
        for (int loop = 0; loop < 2; loop++) {
          TestRegion.Node booker = loop == 0 ? a : b;
          TestRegion.Node releaser = loop == 0 ? b : a;
          LoopLog log = logs[loop];
          String prefix = "load-" + loop + "-";
          running.add(CompletableFuture.runAsync(() -> bookAndRelease(booker, releaser, model, prefix, log, started),
              loops));
        }
        await().atMost(TestRegion.TIMEOUT).until(() -> started.get() >= 20);
        long killedAtNanos = System.nanoTime();
        region.kill(victim);

        // the actor is back on a survivor, in a new incarnation
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
            .until(() -> join(a.client(model).snapshot(null)).epoch() > epochBefore);
        for (CompletableFuture<Void> loop : running) {
          loop.get(LOOP_TIME.toSeconds() + 10, TimeUnit.SECONDS);
        }

        for (LoopLog log : logs) {
          assertThat(log.unclear).as("every Book is answered: a booking or a clear error").isEmpty();
          assertThat(log.booked.get()).as("Books admitted").isPositive();
        }
        // acknowledged before the kill: still live, released through either survivor
        for (int i = 0; i < kept.size(); i++) {
          TestRegion.Node via = i % 2 == 0 ? b : a;
          BookingAnswer booking = kept.get(i);
          assertThat(join(via.client(model).release(booking.requestId(), booking.attempt(), null)).applied())
              .as("release of %s", booking.requestId()).isTrue();
        }
        // a Book whose answer was lost: the client replays it by its request id, then releases what it gets
        for (LoopLog log : logs) {
          for (String requestId : log.lostAnswers) {
            BookingAnswer replayed = join(a.client(model).book(Requests.of(model, requestId, 64), null));
            assertThat(join(b.client(model).release(requestId, replayed.attempt(), null)).applied()).isTrue();
          }
          // a release lost in the crash: release again (it may have reached the new incarnation already)
          for (BookingAnswer booking : log.unreleased) {
            join(a.client(model).release(booking.requestId(), booking.attempt(), null));
          }
          // a release answered inside the replication window before the kill may be undone by the failover (the
          // booking comes back until its lease ends): its client releases again. Older releases must hold.
          for (Released release : log.released) {
            if (release.atNanos() > killedAtNanos - WINDOW.toNanos()) {
              join(b.client(model).release(release.booking().requestId(), release.booking().attempt(), null));
            }
          }
        }

        ModelSnapshot end = join(a.client(model).snapshot(null));
        assertThat(end.bookings()).as("live bookings at the end; loops: %s", List.of(logs)).isEmpty();
        assertThat(end.workers()).allSatisfy(w -> assertThat(w.ranks()).allSatisfy(r -> {
          assertThat(r.load().inFlight()).isZero();
          assertThat(r.load().prefillTokens()).isZero();
          assertThat(r.load().decodeBlocks()).isZero();
        }));
        await().atMost(TestRegion.TIMEOUT).until(() -> inFlightSeenBy(a, model) == 0 && inFlightSeenBy(b, model) == 0);
      } finally {
        reporter.shutdownNow();
        loops.shutdownNow();
      }
    }
  }

  /** Book through one node, release through the other; bounded in count and time. */
  private static void bookAndRelease(TestRegion.Node booker, TestRegion.Node releaser, String model, String prefix,
      LoopLog log, AtomicInteger started) {
    long end = System.nanoTime() + LOOP_TIME.toNanos();
    for (int i = 0; i < LOOP_BOOKS && System.nanoTime() < end; i++) {
      started.incrementAndGet();
      String requestId = prefix + i;
      BookingAnswer booking;
      try {
        booking = booker.client(model).book(Requests.of(model, requestId, 64), null).get(10, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof RoutingException routing) {
          log.rejected.incrementAndGet();
          if (RoutingError.ADMISSION_TIMEOUT.equals(routing.error().reason())) {
            log.lostAnswers.add(requestId);
          }
        } else {
          log.unclear.add(e.getCause());
        }
        continue;
      } catch (InterruptedException | TimeoutException e) {
        log.unclear.add(e);
        return;
      }
      log.booked.incrementAndGet();
      try {
        if (releaser.client(model).release(requestId, booking.attempt(), null).toCompletableFuture()
            .get(10, TimeUnit.SECONDS).applied()) {
          log.released.add(new Released(booking, System.nanoTime()));
        } else {
          log.unreleased.add(booking);
        }
      } catch (ExecutionException | TimeoutException e) {
        log.unreleased.add(booking);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Bookings in flight on the model's ranks, as this node's view shows them. */
  private static int inFlightSeenBy(TestRegion.Node node, String model) {
    SelectionView view = node.view(model);
    if (view == null) {
      return -1;
    }
    int sum = 0;
    for (int i = 0; i < view.rankCount(); i++) {
      sum += view.cell(i).booked().inFlight();
    }
    return sum;
  }
}
