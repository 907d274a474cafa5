package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.CallOptions;
import io.grpc.Status;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.server.TestRouter;
import io.kvrouter.server.grpc.GrpcErrors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * PEKKO_FAST: which calls its own handler answers and which it leaves to the stock handler, by its counters. A unary
 * call normally reaches the fast path, but now and then grpc-java's client sends the request's end of stream in a
 * DATA frame of its own, pekko-http then hands over a streamed entity, and the stock handler answers (by design):
 * so the tests that expect the fast path ask a few times and check that the fast path answered at least once.
 */
class FastPathTest {
  private static final String MODEL = "fast-path";
  private static TestRouter router;
  private static RawGrpc raw;
  private static TransportStats stats;

  @BeforeAll
  static void start() {
    router = TestRouter.start(Binding.PEKKO_FAST);
    raw = new RawGrpc(router.node.grpcPort());
    stats = TransportStats.get(router.node.system());
    join(router.workers.register(worker(MODEL, "w1").build()));
  }

  @AfterAll
  static void stop() throws Exception {
    raw.close();
    router.close();
  }

  private record Counts(long fast, long stock) {
    static Counts now() {
      return new Counts(stats.fastPathCalls(), stats.stockCalls());
    }

    Counts since(Counts before) {
      return new Counts(fast - before.fast, stock - before.stock);
    }
  }

  private static RouteRequest.Builder select() {
    return RouteRequest.newBuilder().setModel(MODEL).setIslTokens(64);
  }

  private static final int TRIES = 10;

  @Test
  void aSelectTakesTheFastPath() {
    Counts before = Counts.now();
    for (int i = 0; i < TRIES; i++) {
      assertThat(join(router.router.select(select().build())).getWorker().getWorkerId()).isEqualTo("w1");
    }
    Counts calls = Counts.now().since(before);
    assertThat(calls.fast + calls.stock).isEqualTo(TRIES);
    assertThat(calls.fast).isPositive();
  }

  @Test
  void bookAndReleaseTakeTheFastPath() {
    Counts before = Counts.now();
    for (int i = 0; i < TRIES; i++) {
      Booking booking = join(router.router.book(select().setRequestId("fast-" + i).build()));
      assertThat(join(router.router.release(BookingRef.newBuilder().setModel(MODEL).setRequestId("fast-" + i)
          .setAttempt(booking.getAttempt()).build())).getApplied()).isTrue();
    }
    Counts calls = Counts.now().since(before);
    assertThat(calls.fast + calls.stock).isEqualTo(2 * TRIES);
    assertThat(calls.fast).isPositive();
  }

  @Test
  void errorsOnTheFastPathAreTrailersOnlyWithTheReason() {
    Counts before = Counts.now();
    for (int i = 0; i < TRIES; i++) {
      var e = failure(router.router.select(select().setModel("nope").build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
      assertThat(reason(e)).isEqualTo("UNKNOWN_MODEL");
      assertThat(e.getStatus().getDescription()).contains("nope");
    }
    assertThat(Counts.now().since(before).fast).isPositive();
  }

  @Test
  void healthAndReflectionGoToTheStockHandler() throws Exception {
    Counts before = Counts.now();
    raw.call(TransportTest.HEALTH_CHECK, CallOptions.DEFAULT, HealthCheckRequest.getDefaultInstance());
    assertThat(raw.listServices()).contains("kvrouter.v1.Router");
    assertThat(Counts.now().since(before)).isEqualTo(new Counts(0, 2));
  }

  @Test
  void aGzipCompressedCallGoesToTheStockHandlerAndSucceeds() {
    Counts before = Counts.now();
    for (int i = 0; i < TRIES; i++) {
      assertThat(raw.call(TransportTest.SELECT, CallOptions.DEFAULT.withCompression("gzip"), select().build())
          .getWorker().getWorkerId()).isEqualTo("w1");
    }
    assertThat(Counts.now().since(before)).isEqualTo(new Counts(0, TRIES));
    // the same call uncompressed takes the fast path
    Counts uncompressed = Counts.now();
    for (int i = 0; i < TRIES; i++) {
      raw.call(TransportTest.SELECT, CallOptions.DEFAULT, select().build());
    }
    assertThat(Counts.now().since(uncompressed).fast).isPositive();
  }

  @Test
  void percentEncodingFollowsTheGrpcSpec() {
    assertThat(GrpcErrors.percentEncode("plain text")).isEqualTo("plain text");
    assertThat(GrpcErrors.percentEncode("100%")).isEqualTo("100%25");
    assertThat(GrpcErrors.percentEncode("é\n")).isEqualTo("%C3%A9%0A");
  }
}
