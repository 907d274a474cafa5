package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.Disaggregation;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The node hosting the admission actor of a model with prefill and decode workers dies: the new incarnation on a
 * survivor recovers every pair with both its halves (the decode rank, and whether the prefill rank was already freed),
 * and one Release of each booking reference frees both ranks.
 */
class PairFailoverTest {
  private static final String FAST_FAILURE_DETECTION = """
      pekko.cluster.failure-detector.heartbeat-interval = 300ms
      pekko.cluster.failure-detector.acceptable-heartbeat-pause = 1s
      """;
  private static final int PAIRS = 6;

  private static WorkerConfig worker(String id, WorkerRole role) {
    return new WorkerConfig(id, 0, 1, 8192, 1000, 16, "http://" + id, "local", role);
  }

  @Test
  void everyPairSurvivesTheFailoverWithBothHalves() {
    try (TestRegion region = TestRegion.start(3, FAST_FAILURE_DETECTION)) {
      TestRegion.Node victim = region.node(2);
      TestRegion.Node a = region.node(0);
      TestRegion.Node b = region.node(1);
      String model = Hosting.modelHostedOn(victim, a, "pairs", "placeholder");
      for (WorkerConfig w : List.of(worker("p1", WorkerRole.PREFILL), worker("p2", WorkerRole.PREFILL),
          worker("d1", WorkerRole.DECODE), worker("d2", WorkerRole.DECODE))) {
        join(a.client(model).register(w, null));
      }
      join(a.client(model).deregister("placeholder", null));

      Map<String, BookingAnswer> booked = new HashMap<>();
      for (int i = 0; i < PAIRS; i++) {
        BookingAnswer answer = join(a.client(model).book(Requests.of(model, "pair-" + i, 64)
            .withDisaggregation(Disaggregation.DISAGGREGATED), null));
        assertThat(answer.selection().disaggregated()).isTrue();
        booked.put(answer.requestId(), answer);
      }
      for (int i = 0; i < 2; i++) {
        BookingAnswer done = booked.get("pair-" + i);
        assertThat(join(a.client(model).markPrefillDone(done.requestId(), done.attempt(), null)).applied()).isTrue();
      }
      // b's view has every pair: PAIRS decode ranks' requests and PAIRS - 2 prefill ranks' requests
      await().atMost(TestRegion.TIMEOUT).until(() -> inFlightSeenBy(b, model) == 2 * PAIRS - 2);

      region.kill(victim);
      await().atMost(Duration.ofSeconds(20)).until(() -> region.live().stream()
          .anyMatch(node -> Hosting.localAdmission(node, model) != null));

      ModelSnapshot recovered = join(b.client(model).snapshot(null));
      Map<String, Rank> decodeRanks = new HashMap<>();
      for (ModelSnapshot.BookingSnapshot s : recovered.bookings()) {
        decodeRanks.put(s.requestId(), s.decodeRank());
      }
      assertThat(decodeRanks).hasSize(PAIRS);
      for (BookingAnswer answer : booked.values()) {
        assertThat(decodeRanks.get(answer.requestId())).as(answer.requestId())
            .isEqualTo(answer.selection().decode().rank());
      }
      List<Boolean> applied = new ArrayList<>();
      for (BookingAnswer answer : booked.values()) {
        TestRegion.Node via = applied.size() % 2 == 0 ? a : b;
        applied.add(join(via.client(model).release(answer.requestId(), answer.attempt(), null)).applied());
      }
      assertThat(applied).containsOnly(true);
      ModelSnapshot after = join(b.client(model).snapshot(null));
      assertThat(after.bookings()).isEmpty();
      for (ModelSnapshot.WorkerSnapshot w : after.workers()) {
        for (ModelSnapshot.RankSnapshot r : w.ranks()) {
          assertThat(r.load().inFlight()).as(w.config().workerId()).isZero();
          assertThat(r.load().prefillTokens()).as(w.config().workerId()).isZero();
          assertThat(r.load().decodeBlocks()).as(w.config().workerId()).isZero();
        }
      }
    }
  }

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
