package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelClient;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The test config sets sharding's idle passivation timeout to 1 s. A model that receives only advisory Selects
 * sends its actor nothing, so with passivation on its actor (and the booking) would be gone after 3 s.
 */
class PassivationOffTest {
  @Test
  void anEntityThatOnlySeesSelectsKeepsItsBookings() throws Exception {
    try (TestCluster cluster = TestCluster.start(Clock.SYSTEM)) {
      ModelClient client = cluster.modelWithWorkers("quiet", "round_robin", "a", "b");
      BookingAnswer booked = join(client.book(Requests.of("quiet", "kept", 64), null));
      // workers and no booking: not empty, so its actor does not passivate itself either
      ModelClient selectsOnly = cluster.modelWithWorkers("selects-only", "round_robin", "c");
      var selectsOnlyActor = Hosting.localAdmission(cluster.routing, selectsOnly.model());
      AtomicInteger selects = new AtomicInteger();
      // the property is "kept for longer than the idle timeout": each poll selects on both models and checks that
      // both actors still run, and must hold for 3 s (three idle timeouts)
      await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
          .until(() -> {
            client.selectWithoutAdmission(Requests.of("quiet", "", 64));
            selectsOnly.selectWithoutAdmission(Requests.of("selects-only", "", 64));
            selects.incrementAndGet();
            return UnknownModelTest.entities(cluster).containsAll(java.util.List.of("quiet", "selects-only"));
          });
      assertThat(selects.get()).isPositive();
      ModelSnapshot state = cluster.state(client);
      assertThat(state.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId).containsExactly("kept");
      assertThat(state.bookings().get(0).attempt()).isEqualTo(booked.attempt());
      assertThat(selectsOnlyActor).isNotNull();
      assertThat(Hosting.localAdmission(cluster.routing, "selects-only")).isEqualTo(selectsOnlyActor);
      assertThat(UnknownModelTest.entities(cluster)).containsExactly("quiet", "selects-only");
    }
  }
}
