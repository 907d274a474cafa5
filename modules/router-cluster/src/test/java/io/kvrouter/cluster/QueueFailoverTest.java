package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The node hosting a model's admission actor dies with Books waiting in its queue (relayed through the two other
 * nodes, each with a 30 s deadline). Their reply addresses travelled with the replicated state, so the new incarnation
 * answers each one UNAVAILABLE RECOVERING (retryable) as soon as it has recovered, long before its deadline: none is
 * lost, none booked behind its caller's back; the bookings that held the workers survive and are released, and retried
 * Books are booked on the new incarnation. The time from the kill to each answer is logged.
 */
class QueueFailoverTest {
  private static final String[] WORKERS = {"w1", "w2"};
  private static final int QUEUED = 20;
  private static final Duration DEADLINE = Duration.ofSeconds(30);
  private static final String FAST_FAILURE_DETECTION = """
      pekko.cluster.failure-detector.heartbeat-interval = 300ms
      pekko.cluster.failure-detector.acceptable-heartbeat-pause = 1s
      """;

  @Test
  void booksQueuedOnADeadOwnerAreAnsweredRecoveringByTheNextIncarnation() throws Exception {
    try (TestRegion region = TestRegion.start(3, FAST_FAILURE_DETECTION)) {
      TestRegion.Node victim = region.node(1);
      TestRegion.Node a = region.node(0);
      TestRegion.Node b = region.node(2);
      String model = Hosting.modelHostedOn(victim, a, "queue-failover", WORKERS);
      join(a.client(model).setPolicy(null, Map.of("queue_prefill_tokens_threshold", "0"), null));
      await().atMost(TestRegion.TIMEOUT).until(() -> List.of(a, b).stream().allMatch(node -> node.view(model) != null
          && node.view(model).workers().keySet().containsAll(List.of(WORKERS))
          && node.view(model).policy().queue().enabled()));
      List<BookingAnswer> holders = new ArrayList<>();
      for (int i = 0; i < WORKERS.length; i++) {
        holders.add(join(a.client(model).book(Requests.of(model, "holder-" + i, 64), null)));
      }
      List<CompletableFuture<BookingAnswer>> waiting = new ArrayList<>();
      Map<Integer, Long> answeredAtNanos = new ConcurrentHashMap<>();
      for (int i = 0; i < QUEUED; i++) {
        TestRegion.Node via = i % 2 == 0 ? a : b;
        int index = i;
        CompletableFuture<BookingAnswer> call = via.client(model).book(Requests.of(model, "queued-" + i, 64),
            DEADLINE);
        call.whenComplete((answer, failure) -> answeredAtNanos.put(index, System.nanoTime()));
        waiting.add(call);
      }
      await().atMost(TestRegion.TIMEOUT).until(() -> join(a.client(model).snapshot(null)).pending() == QUEUED);
      // every survivor's copy holds the queue: it has applied what the owner has sent
      long ownerSeq = join(victim.client(model).state(null)).staleness().seq();
      await().atMost(TestRegion.TIMEOUT).until(() -> List.of(a, b).stream().allMatch(node ->
          join(node.client(model).replicaStaleness(TestRegion.TIMEOUT)).seq() >= ownerSeq));
      assertThat(waiting).noneMatch(CompletableFuture::isDone);

      ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor();
      try {
        // the engines' heartbeat: the recovered actor admits only to workers that reported since it started
        reporter.scheduleAtFixedRate(() -> {
          for (String id : WORKERS) {
            a.client(model).reportLoad(id, List.of(new RankReport(0, 0, 0, 0)), null);
          }
        }, 0, 100, TimeUnit.MILLISECONDS);
        long killedAt = System.nanoTime();
        region.kill(victim);

        CompletableFuture.allOf(waiting.stream().map(f -> f.exceptionally(e -> null))
            .toArray(CompletableFuture[]::new)).get(DEADLINE.toSeconds() - 5, TimeUnit.SECONDS);
        for (CompletableFuture<BookingAnswer> call : waiting) {
          assertThat(call).isCompletedExceptionally();
          assertThat(call.handle((answer, failure) -> failure).join())
              .isInstanceOfSatisfying(RoutingException.class, e -> {
                assertThat(e.error().code()).isEqualTo(RoutingError.Code.UNAVAILABLE);
                assertThat(e.error().reason()).isEqualTo(RoutingError.RECOVERING);
              });
        }
        List<Long> millis = answeredAtNanos.values().stream().map(t -> (t - killedAt) / 1_000_000).sorted().toList();
        System.out.printf("queue failover: %d of %d queued Books answered RECOVERING, %d to %d ms after the kill%n",
            millis.size(), QUEUED, millis.get(0), millis.get(millis.size() - 1));

        ModelSnapshot recovered = join(a.client(model).snapshot(null));
        assertThat(recovered.pending()).as("a recovered queue is answered, not resumed").isZero();
        assertThat(recovered.queue().classes().get(0).rejections()).containsEntry("RECOVERING", (long) QUEUED);
        assertThat(recovered.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId)
            .containsExactlyInAnyOrder("holder-0", "holder-1");
        for (BookingAnswer holder : holders) {
          assertThat(join(b.client(model).release(holder.requestId(), holder.attempt(), null)).applied()).isTrue();
        }
        // the callers retry: the new incarnation books them (two at once, the rest as the first ones finish)
        BookingAnswer retried = join(b.client(model).book(Requests.of(model, "queued-0", 64), DEADLINE));
        assertThat(join(a.client(model).release("queued-0", retried.attempt(), null)).applied()).isTrue();
        assertThat(join(a.client(model).snapshot(null)).bookings()).isEmpty();
      } finally {
        reporter.shutdownNow();
      }
    }
  }
}
