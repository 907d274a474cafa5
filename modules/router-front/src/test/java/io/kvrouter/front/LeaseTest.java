package io.kvrouter.front;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.front.testkit.FrontNode;
import io.kvrouter.front.testkit.ScriptedEngine;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A stream longer than the booking's lease keeps its booking: the front marks prefill done at the first token and
 * renews the lease while the stream runs, then releases it; nothing expires.
 */
class LeaseTest {
  @Test
  void aStreamLongerThanTheLeaseIsMarkedPrefillDoneRenewedAndReleasedWithoutExpiring() throws Exception {
    try (FrontNode node = FrontNode.start("""
            kvrouter.admission.lease = 1500ms
            kvrouter.front.renew-interval = 300ms
            """);
         ScriptedEngine engine = ScriptedEngine.start(node.kit.system())
             .stream(40, Duration.ofMillis(200), Duration.ofMillis(100))) {
      String model = "org/lease";
      node.register(model, "w1", engine.url());
      CompletableFuture<HttpResponse<String>> response = ForwardingTest.HTTP.sendAsync(HttpRequest.newBuilder(
              URI.create(node.url() + "/v1/completions")).header("content-type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(ForwardingTest.completion(model, true))).build(),
          HttpResponse.BodyHandlers.ofString());
      // the first token marks prefill done
      await().atMost(Duration.ofSeconds(5)).until(() -> {
        ModelSnapshot snapshot = node.snapshot(model);
        return snapshot.bookings().size() == 1 && snapshot.bookings().get(0).prefillDone();
      });
      long firstLease = node.snapshot(model).bookings().get(0).leaseExpiresAtMillis();
      // renewals move the lease on past its first end, and the booking is still there
      await().atMost(Duration.ofSeconds(5)).until(() -> {
        ModelSnapshot snapshot = node.snapshot(model);
        return snapshot.bookings().size() == 1 && snapshot.bookings().get(0).leaseExpiresAtMillis() > firstLease + 1_000;
      });
      HttpResponse<String> answer = response.get();
      assertThat(answer.statusCode()).isEqualTo(200);
      assertThat(answer.body()).contains(" t39").endsWith("data: [DONE]\n\n");
      await().atMost(Duration.ofSeconds(5)).until(() -> node.liveBookings(model) == 0);
      assertThat(node.snapshot(model).expiredBookings()).isZero();
    }
  }
}
