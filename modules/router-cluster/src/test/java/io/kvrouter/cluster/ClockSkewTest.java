package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Nodes whose clocks disagree by far more than the deadline margin: a Book relayed through one node carries how long
 * its caller waits, and the owner bounds the Book by that on its own clock. No node reads another's clock.
 */
class ClockSkewTest {
  private static final long SKEW_MILLIS = 60_000;
  private static TestRegion region;
  private static TestRegion.Node relay;
  private static TestRegion.Node ahead;
  private static TestRegion.Node behind;

  @BeforeAll
  static void start() {
    region = TestRegion.start(0);
    relay = region.join(Clock.SYSTEM);
    ahead = region.join(() -> System.currentTimeMillis() + SKEW_MILLIS);
    behind = region.join(() -> System.currentTimeMillis() - SKEW_MILLIS);
  }

  @AfterAll
  static void stop() {
    region.close();
  }

  @Test
  void aBookWhoseCallerStillHasTimeIsAdmittedByAnOwnerWhoseClockIsAhead() {
    String model = Hosting.modelHostedOn(ahead, relay, "ahead", "w1");
    ModelClient client = relay.client(model);
    BookingAnswer booked = join(client.book(Requests.of(model, "in-time", 64), Duration.ofSeconds(2)));
    assertThat(booked.replay()).isFalse();
    ModelSnapshot state = join(client.snapshot(null));
    assertThat(state.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId).containsExactly("in-time");
    assertThat(join(client.release("in-time", booked.attempt(), null)).applied()).isTrue();
  }

  /**
   * The Book is sent as a relay sends it, but nobody cancels it when its caller gives up (as when the relaying node
   * dies right after its ask timed out): only the owner's own deadline stands between it and a booking nobody waits
   * for. The owner's clock is behind the relay's, so a deadline computed on the relay's clock would still be a minute
   * away.
   */
  @Test
  void aBookWhoseCallerGaveUpIsNotAdmittedByAnOwnerWhoseClockIsBehind() {
    String model = Hosting.modelHostedOn(behind, relay, "behind", "w1");
    ModelClient client = relay.client(model);
    join(client.setPolicy(null, Map.of("queue_threshold_frac", "0"), null));
    BookingAnswer holder = join(client.book(Requests.of(model, "holder", 64), null));

    TestProbe<ModelAdmission.BookReply> caller = relay.kit().createTestProbe();
    ClusterSharding.get(relay.kit().system())
        .entityRefFor(ModelAdmission.ENTITY_KEY, model)
        .tell(new ModelAdmission.Book(Requests.of(model, "gave-up", 64), 42, 500, caller.ref()));
    ModelAdmission.BookReply reply = caller.expectMessageClass(ModelAdmission.BookReply.class, Duration.ofSeconds(10));
    assertThat(reply).isInstanceOfSatisfying(ModelAdmission.Refused.class, refused ->
        assertThat(refused.error().code()).isEqualTo(RoutingError.Code.DEADLINE_EXCEEDED));

    // capacity frees after the caller gave up: the expired Book is not admitted
    assertThat(join(client.release("holder", holder.attempt(), null)).applied()).isTrue();
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      ModelSnapshot state = join(client.snapshot(null));
      assertThat(state.pending()).isZero();
      assertThat(state.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId)
          .doesNotContain("gave-up", "holder");
    });
  }
}
