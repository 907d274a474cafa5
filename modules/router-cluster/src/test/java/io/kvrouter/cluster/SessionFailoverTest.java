package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.admission.SessionOutcome;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.replication.SessionBinding;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SessionAffinity;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The node hosting a model's admission actor dies holding session bindings. They were replicated with the ledger,
 * so the next incarnation (on another node) recovers them: every session's next Book, relayed through a surviving
 * node, goes to the rank it was bound to before the failover and reports the binding kept.
 */
class SessionFailoverTest {
  private static final String[] WORKERS = {"w1", "w2", "w3"};
  private static final int SESSIONS = 12;
  private static final Duration DEADLINE = Duration.ofSeconds(20);
  private static final String FAST_FAILURE_DETECTION = """
      pekko.cluster.failure-detector.heartbeat-interval = 300ms
      pekko.cluster.failure-detector.acceptable-heartbeat-pause = 1s
      """;

  private static SelectionRequest sessionBook(String model, String requestId, String session) {
    return Requests.of(model, requestId, 64).withSession(SessionAffinity.of(session, SessionMode.HARD));
  }

  @Test
  void sessionBindingsSurviveTheDeathOfTheOwnersNode() throws Exception {
    try (TestRegion region = TestRegion.start(3, FAST_FAILURE_DETECTION)) {
      TestRegion.Node victim = region.node(1);
      TestRegion.Node a = region.node(0);
      TestRegion.Node b = region.node(2);
      String model = Hosting.modelHostedOn(victim, a, "session-failover", WORKERS);
      join(a.client(model).setPolicy("round_robin", Map.of("seed", "5"), null)); // sessions spread over the workers
      Map<String, Rank> bound = new HashMap<>();
      for (int i = 0; i < SESSIONS; i++) {
        BookingAnswer answer = join(a.client(model).book(sessionBook(model, "before-" + i, "session-" + i), null));
        assertThat(answer.session().kind()).isEqualTo(SessionOutcome.Kind.BOUND);
        bound.put("session-" + i, answer.selection().rank());
        assertThat(join(a.client(model).release(answer.requestId(), answer.attempt(), null)).applied()).isTrue();
      }
      assertThat(bound.values().stream().map(Rank::workerId).distinct()).as("bound to several workers")
          .hasSizeGreaterThan(1);
      long epochBefore = join(a.client(model).snapshot(null)).epoch();
      long ownerSeq = join(victim.client(model).state(null)).staleness().seq();
      await().atMost(TestRegion.TIMEOUT).until(() -> List.of(a, b).stream().allMatch(node ->
          join(node.client(model).replicaStaleness(TestRegion.TIMEOUT)).seq() >= ownerSeq));

      ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor();
      try {
        reporter.scheduleAtFixedRate(() -> {
          for (String id : WORKERS) {
            a.client(model).reportLoad(id, List.of(new RankReport(0, 0, 0, 0)), null);
          }
        }, 0, 100, TimeUnit.MILLISECONDS);
        region.kill(victim);

        // round_robin would spread them afresh: only the recovered bindings put every session back on its rank
        for (int i = 0; i < SESSIONS; i++) {
          String session = "session-" + i;
          String requestId = "after-" + i;
          AtomicReference<BookingAnswer> after = new AtomicReference<>();
          await().atMost(DEADLINE).ignoreExceptions().until(() -> {
            after.set(join(b.client(model).book(sessionBook(model, requestId, session), null)));
            return true;
          });
          assertThat(after.get().selection().rank()).as(session).isEqualTo(bound.get(session));
          assertThat(after.get().session().kind()).isEqualTo(SessionOutcome.Kind.KEPT);
        }
        ModelSnapshot recovered = join(b.client(model).snapshot(null));
        assertThat(recovered.epoch()).as("a new incarnation answered").isGreaterThan(epochBefore);
        assertThat(recovered.sessions().recent().stream()
            .collect(Collectors.toMap(SessionBinding::sessionId, SessionBinding::rank))).isEqualTo(bound);
      } finally {
        reporter.shutdownNow();
      }
    }
  }
}
