package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** {@code kvrouter.admission.relay.mode = ask}: no relay; a Book through a non-owner is an ask through the region. */
class BookRelayAskModeTest {
  @Test
  void relayedBooksAreAskedThroughTheShardRegion() {
    try (TestRegion region = TestRegion.start(3, "kvrouter.admission.relay.mode = ask\n")) {
      TestRegion.Node relay = region.node(0);
      String model = Hosting.modelHostedOn(region.node(2), relay, "ask", "w1", "w2");
      await().atMost(TestRegion.TIMEOUT).until(() -> relay.view(model) != null
          && relay.view(model).workers().size() == 2);
      assertThat(relay.routing().bookRelay()).isNull();
      ModelClient client = relay.client(model);
      List<CompletableFuture<BookingAnswer>> calls = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        calls.add(client.book(Requests.of(model, "a-" + i, 64), Duration.ofSeconds(5)));
      }
      for (int i = 0; i < calls.size(); i++) {
        BookingAnswer answer = join(calls.get(i));
        assertThat(answer.requestId()).isEqualTo("a-" + i);
        assertThat(join(client.release(answer.requestId(), answer.attempt(), null)).applied()).isTrue();
      }
      assertThat(join(client.snapshot(null)).bookings()).isEmpty();
    }
  }
}
