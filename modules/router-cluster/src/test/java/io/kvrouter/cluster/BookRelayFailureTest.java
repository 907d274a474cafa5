package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.membership.RankReport;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Relayed Books in flight (many callers through a node that does not host the model's actor, with coalescing on)
 * while the owner's shard moves to another node (a graceful leave hands it off; the callers also release each
 * booking through the relay before their next Book) or the owner dies: every call completes once, with its own
 * booking or a routing error, none is left pending in the relay, and once every answered booking is released (or,
 * after a crash, has had its lease end) nothing is booked.
 */
class BookRelayFailureTest {
  private static final String[] WORKERS = {"w1", "w2", "w3", "w4"};
  private static final Duration DEADLINE = Duration.ofSeconds(2);
  private static final String CONFIG = """
      kvrouter.admission.relay.coalesce-above = 4
      pekko.cluster.failure-detector.heartbeat-interval = 300ms
      pekko.cluster.failure-detector.acceptable-heartbeat-pause = 1s
      """;

  @ParameterizedTest(name = "direct = {0}")
  @ValueSource(strings = {"off", "on"})
  void theOwnersShardIsHandedOffWhileRelayedBooksAreInFlight(String direct) {
    try (TestRegion region = TestRegion.start(3, CONFIG + "kvrouter.admission.relay.direct = " + direct + "\n")) {
      TestRegion.Node relay = region.node(0);
      TestRegion.Node owner = region.node(2);
      ModelClient client = relayedModel(region, relay, owner, "handoff");
      try (RelayLoad load = new RelayLoad(client, "h-", DEADLINE, 16, true)) {
        await().atMost(TestRegion.TIMEOUT).until(() -> load.booked.size() >= 200);
        region.leave(owner);
        int before = load.booked.size();
        // Books are admitted again, on the shard's new node
        await().atMost(Duration.ofSeconds(20)).until(() -> load.booked.size() >= before + 200);
        load.stop(Duration.ofSeconds(10));
        assertThat(region.live()).as("a node hosting the actor after the hand-off")
            .anyMatch(n -> Hosting.localAdmission(n, client.model()) != null);
        assertCompletedOnce(load, relay);
        assertThat(load.releaseFailures).as("relayed Releases completed twice or with no routing outcome").isEmpty();
        assertThat(load.released.size() + load.releaseUnclear.size()).as("relayed Releases completed")
            .isEqualTo(load.booked.size());
        assertThat(load.released).as("relayed Releases applied").hasSizeGreaterThan(load.booked.size() / 2);
        for (BookingAnswer booking : load.booked.values()) {
          if (load.released.contains(booking.requestId())) {
            continue;
          }
          // a Release that failed during the hand-off may have been applied: only its retry's answer is unclear
          join(relay.client(client.model()).release(booking.requestId(), booking.attempt(), null));
        }
        // a Book that timed out during the hand-off is cancelled by its nonce, wherever it booked
        await().atMost(TestRegion.TIMEOUT).untilAsserted(() ->
            assertThat(join(relay.client(client.model()).snapshot(null)).bookings()).as("live bookings").isEmpty());
      }
    }
  }

  @ParameterizedTest(name = "direct = {0}")
  @ValueSource(strings = {"off", "on"})
  void theOwnerDiesWhileRelayedBooksAreInFlight(String direct) {
    try (TestRegion region = TestRegion.start(3, CONFIG + "kvrouter.admission.lease = 4s\n"
        + "kvrouter.admission.relay.direct = " + direct + "\n")) {
      TestRegion.Node relay = region.node(0);
      TestRegion.Node owner = region.node(2);
      ModelClient client = relayedModel(region, relay, owner, "death");
      ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor();
      // the engines keep reporting load (their heartbeat), so the recovered actor admits to them
      reporter.scheduleAtFixedRate(() -> {
        for (String id : WORKERS) {
          region.node(1).client(client.model()).reportLoad(id, List.of(new RankReport(0, 0, 0, 0)), null);
        }
      }, 0, 100, TimeUnit.MILLISECONDS);
      try (RelayLoad load = new RelayLoad(client, "d-", DEADLINE, 16)) {
        await().atMost(TestRegion.TIMEOUT).until(() -> load.booked.size() >= 200);
        region.kill(owner);
        int before = load.booked.size();
        // Books are admitted again, by the actor recovered on a survivor
        await().atMost(Duration.ofSeconds(30)).until(() -> load.booked.size() >= before + 200);
        load.stop(Duration.ofSeconds(10));
        assertCompletedOnce(load, relay);
        for (BookingAnswer booking : load.booked.values()) {
          // applied, or its lease ended first: either way answered
          join(relay.client(client.model()).release(booking.requestId(), booking.attempt(), null));
        }
        // a booking whose answer died with the owner is held until its lease ends
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() ->
            assertThat(join(relay.client(client.model()).snapshot(null)).bookings()).as("live bookings").isEmpty());
      } finally {
        reporter.shutdownNow();
      }
    }
  }

  private static ModelClient relayedModel(TestRegion region, TestRegion.Node relay, TestRegion.Node owner,
      String prefix) {
    String model = Hosting.modelHostedOn(owner, relay, prefix, WORKERS);
    await().atMost(TestRegion.TIMEOUT).until(() -> region.live().stream().allMatch(n -> n.view(model) != null
        && n.view(model).workers().size() == WORKERS.length));
    return relay.client(model);
  }

  private static void assertCompletedOnce(RelayLoad load, TestRegion.Node relay) {
    assertThat(load.twice).as("calls completed twice or with another call's answer").isEmpty();
    assertThat(load.unclear).as("completions that are neither a booking nor a routing error").isEmpty();
    assertThat(load.completedCalls()).as("calls completed (of %d issued; refused: %s)", load.issued.get(),
        load.refusalReasons()).isEqualTo(load.issued.get());
    assertThat(relay.routing().bookRelay().pending()).as("relayed Books unanswered").isZero();
  }
}
