package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.cluster.testkit.DarkRegion;
import io.kvrouter.server.transport.Binding;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Three regions (Pekko data centers) of one node each in this JVM, a model with idle workers in all three: a global
 * Book from region c goes to region a (idle pools tie, the tie goes to the first name), and when a does not answer
 * (its Books dropped, as across a cut; or its node stopped) it falls back to b, the next by the global choice's order,
 * and nothing stays booked in a.
 */
class GlobalBookFallbackTest {
  private static final Duration CONVERGE = Duration.ofSeconds(60);
  /** Summaries every 100 ms; a pool stays fresh for 30 s, so a stopped region is still the first choice. */
  private static final String REGIONS = """
      kvrouter.regions.summary-interval = 100ms
      kvrouter.regions.stale-after = 30s
      kvrouter.regions.book-attempt-timeout = 500ms
      """;
  private static final DarkRegion A_GATE = new DarkRegion();
  private static TestRouter a;
  private static TestRouter b;
  private static TestRouter c;

  @BeforeAll
  static void startThreeRegions() {
    a = TestRouter.start(Binding.NETTY, REGIONS + "pekko.cluster.multi-data-center.self-data-center = a\n", A_GATE);
    String seed = "kvrouter.cluster.seed-nodes = \"127.0.0.1:"
        + Cluster.get(a.node.system()).selfMember().address().getPort().get() + "\"\n";
    b = TestRouter.start(Binding.NETTY, REGIONS + seed + "pekko.cluster.multi-data-center.self-data-center = b\n");
    c = TestRouter.start(Binding.NETTY, REGIONS + seed + "pekko.cluster.multi-data-center.self-data-center = c\n");
    await().atMost(CONVERGE).until(() -> List.of(a, b, c).stream().allMatch(node -> {
      int up = 0;
      for (var member : Cluster.get(node.node.system()).state().getMembers()) {
        up += member.status() == MemberStatus.up() ? 1 : 0;
      }
      return up == 3;
    }));
  }

  @AfterAll
  static void stop() {
    for (TestRouter node : new TestRouter[] {c, b, a}) {
      if (node != null) {
        node.close();
      }
    }
  }

  private static RouteRequest global(String model, String requestId) {
    return RouteRequest.newBuilder().setModel(model).setRequestId(requestId).setIslTokens(64)
        .setScope(Scope.SCOPE_GLOBAL).build();
  }

  private static void registerEverywhere(String model) {
    for (TestRouter node : List.of(a, b, c)) {
      join(node.workers.register(worker(model, "w-" + node.node.cluster().region()).build()));
    }
    await().atMost(CONVERGE).until(() -> c.node.cluster().regions().pools().regionsWithWorkers(model)
        .containsAll(List.of("a", "b", "c")));
  }

  private static BookingRef ref(String model, Booking booking) {
    return BookingRef.newBuilder().setModel(model).setRequestId(booking.getRequestId())
        .setAttempt(booking.getAttempt()).setRegion(booking.getRegion()).build();
  }

  @Test
  void aGlobalBookToARegionCutOffOrStoppedFallsBackToTheNextRegionAndLeavesNothingThere() {
    String model = "org/fallback-cut";
    registerEverywhere(model);
    Booking first = join(c.router.book(global(model, "reachable")));
    assertThat(first.getRegion()).as("idle pools tie: the first region by name").isEqualTo("a");
    assertThat(join(c.router.release(ref(model, first))).getApplied()).isTrue();

    A_GATE.dropBooks(true);
    try {
      Booking fallback = join(c.router.book(global(model, "cut")));
      assertThat(fallback.getRegion()).isEqualTo("b");
      assertThat(fallback.getSelection().getWorker().getWorkerId()).isEqualTo("w-b");
      assertThat(b.state(model).getBookingsList()).extracting(x -> x.getRequestId()).containsExactly("cut");
      assertThat(a.state(model).getBookingsCount()).isZero();
      assertThat(join(c.router.release(ref(model, fallback))).getApplied()).isTrue();
      assertThat(b.state(model).getBookingsCount()).isZero();
    } finally {
      A_GATE.dropBooks(false);
    }

    // region a stopped: its pool is still fresh here (the first choice), and nothing answers there
    a.close();
    a = null;
    Booking afterStop = join(c.router.book(global(model, "stopped")));
    assertThat(afterStop.getRegion()).isEqualTo("b");
    assertThat(join(c.router.release(ref(model, afterStop))).getApplied()).isTrue();
  }
}
