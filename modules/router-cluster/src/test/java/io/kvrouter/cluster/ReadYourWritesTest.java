package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.testkit.Requests;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A node that relays a Book applies the booked rank's new load to its own view before it answers, so the caller's next
 * Select on that node sees the booking. Replication is held back here (its interval and resend-after are an hour, and
 * answers do not wait for the majority, which would send each change at once), so only the answers can have moved
 * the relaying node's view.
 */
class ReadYourWritesTest {
  @Test
  void fourBooksThroughANonOwnerLandOnFourWorkersAndEachSelectAfterABookAvoidsTheBookedOnes() {
    try (TestRegion region = TestRegion.start(3, """
        kvrouter.replication.interval = 1h
        kvrouter.replication.resend-after = 1h
        kvrouter.replication.wait-for-majority = off
        """)) {
      TestRegion.Node b = region.node(1);
      // hosted elsewhere; registered through b, which adopts the view each reply carries
      String model = Hosting.modelHostedOn(region.node(2), b, "ryw", "w1", "w2", "w3", "w4");
      join(b.client(model).setPolicy("least_in_flight", Map.of("seed", "5"), null));
      assertThat(b.client(model).view().workers()).hasSize(4);

      Set<String> booked = new HashSet<>();
      for (int i = 0; i < 4; i++) {
        BookingAnswer answer = join(b.client(model).book(Requests.of(model, "r" + i, 64), null));
        assertThat(booked.add(answer.selection().rank().workerId())).as("Book %d on a fresh worker", i).isTrue();
        if (i < 3) {
          SelectionResult next = b.client(model).selectWithoutAdmission(Requests.of(model, "s" + i, 64));
          assertThat(next.rank().workerId()).as("Select after Book %d", i).isNotIn(booked);
        }
      }
      assertThat(booked).containsExactlyInAnyOrder("w1", "w2", "w3", "w4");
    }
  }
}
