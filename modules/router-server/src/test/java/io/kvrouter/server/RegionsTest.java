package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.PoolSummary;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.cluster.testkit.DarkRegion;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import java.util.Set;
import java.util.concurrent.CompletionException;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.server.transport.Binding;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Two regions (Pekko data centers), one router node each, in this JVM: pool summaries cross regions, global Selects
 * and Books pick the less loaded region, booking references reach the booking's region from the other one.
 */
class RegionsTest {
  private static final Duration CONVERGE = Duration.ofSeconds(30);
  /** Summaries every 100 ms, stale after 600 ms: a paused region goes stale within a second. */
  private static final String REGIONS = """
      kvrouter.regions.summary-interval = 100ms
      kvrouter.regions.stale-after = 600ms
      pekko.cluster.typed.receptionist.distributed-data.gossip-interval = 200ms
      pekko.cluster.typed.receptionist.distributed-data.notify-subscribers-interval = 100ms
      """;

  private static final DarkRegion US_GATE = new DarkRegion();
  private static final DarkRegion EU_GATE = new DarkRegion();
  private static TestRouter us;
  private static TestRouter eu;

  @BeforeAll
  static void startTwoRegions() {
    us = TestRouter.start(Binding.NETTY, REGIONS + "pekko.cluster.multi-data-center.self-data-center = us\n",
        US_GATE);
    int seedPort = (Integer) Cluster.get(us.node.system()).selfMember().address().getPort().get();
    eu = TestRouter.start(Binding.NETTY, REGIONS + "pekko.cluster.multi-data-center.self-data-center = eu\n"
        + "kvrouter.cluster.seed-nodes = \"127.0.0.1:" + seedPort + "\"\n", EU_GATE);
    await().atMost(CONVERGE).until(() -> List.of(us, eu).stream().allMatch(node -> {
      var members = Cluster.get(node.node.system()).state().getMembers();
      int up = 0;
      for (var member : members) {
        up += member.status() == MemberStatus.up() ? 1 : 0;
      }
      return up == 2;
    }));
  }

  @AfterAll
  static void stop() {
    if (eu != null) {
      eu.close();
    }
    if (us != null) {
      us.close();
    }
  }

  private static RouteRequest request(String model, String requestId, Scope scope) {
    return RouteRequest.newBuilder().setModel(model).setRequestId(requestId).setIslTokens(1600).setScope(scope)
        .build();
  }

  private static void awaitPool(TestRouter node, String model, String region) {
    await().atMost(CONVERGE).until(() -> node.node.cluster().regions().pools().pools(model).stream()
        .anyMatch(p -> p.region().equals(region) && p.workers() > 0));
  }

  private static String endpointOf(TestRouter node) {
    return "127.0.0.1:" + node.node.grpcPort();
  }

  @Test
  void globalSelectsPreferTheRegionLessLoadedForItsCapacityAndAvoidARegionGoneDark() {
    String model = "org/balanced";
    join(us.workers.register(worker(model, "w-us").setTotalKvBlocks(1000).build()));
    join(eu.workers.register(worker(model, "w-eu").setTotalKvBlocks(4000).build()));
    // us: 100 of 1000 blocks held (0.1); eu: 300 of 4000 (0.075), more blocks but less loaded for its capacity
    join(us.router.book(request(model, "u1", Scope.SCOPE_REGION)));
    for (int i = 0; i < 3; i++) {
      join(eu.router.book(request(model, "e" + i, Scope.SCOPE_REGION)));
    }
    await().atMost(CONVERGE).until(() -> join(us.router.select(request(model, "", Scope.SCOPE_GLOBAL)))
        .getRegion().equals("eu"));
    Selection fromUs = join(us.router.select(request(model, "", Scope.SCOPE_GLOBAL)));
    assertThat(fromUs.getRouterEndpoint()).isEqualTo(endpointOf(eu));
    assertThat(fromUs.hasWorker()).as("another region's Select names the region, no worker").isFalse();
    await().atMost(CONVERGE).until(() -> join(eu.router.select(request(model, "", Scope.SCOPE_GLOBAL)))
        .getWorker().getWorkerId().equals("w-eu"));
    Selection fromEu = join(eu.router.select(request(model, "", Scope.SCOPE_GLOBAL)));
    assertThat(fromEu.getRegion()).isEqualTo("eu");
    assertThat(fromEu.getRouterEndpoint()).isEqualTo(endpointOf(eu));
    // a regional Select stays in its region whatever the loads
    assertThat(join(us.router.select(request(model, "", Scope.SCOPE_REGION))).getWorker().getWorkerId())
        .isEqualTo("w-us");

    EU_GATE.silenceSummaries();
    try {
      await().atMost(CONVERGE).until(() -> join(us.router.select(request(model, "", Scope.SCOPE_GLOBAL)))
          .getWorker().getWorkerId().equals("w-us"));
      List<PoolSummary> pools = us.state(model).getPoolsList();
      assertThat(pools).extracting(PoolSummary::getRegion).containsExactly("eu", "us");
      assertThat(pools.get(0).getStale()).isTrue();
      assertThat(pools.get(1).getStale()).isFalse();
    } finally {
      EU_GATE.resumeSummaries();
    }
    await().atMost(CONVERGE).until(() -> join(us.router.select(request(model, "", Scope.SCOPE_GLOBAL)))
        .getRegion().equals("eu"));
  }

  @Test
  void aGlobalBookFromEuBooksAWorkerOfUsAndIsReleasedThroughEu() throws Exception {
    String model = "org/us-only";
    join(us.workers.register(worker(model, "w-us").build()));
    awaitPool(eu, model, "us");

    Booking booking = join(eu.router.book(request(model, "g1", Scope.SCOPE_GLOBAL)));
    assertThat(booking.getRegion()).isEqualTo("us");
    assertThat(booking.getSelection().getWorker().getWorkerId()).isEqualTo("w-us");
    assertThat(booking.getSelection().getWorker().getRegion()).isEqualTo("us");
    assertThat(booking.getSelection().getRouterEndpoint()).isEqualTo(endpointOf(us));
    assertThat(us.state(model).getBookingsList()).extracting(b -> b.getRequestId()).containsExactly("g1");
    // eu counted the booking in its copy of us's pool before any new summary could
    assertThat(eu.node.cluster().regions().pools().pools(model).iterator().next().inFlight()).isPositive();

    // the regional call in eu names the regions that have workers, and touches nothing there
    StatusRuntimeException regional = failure(eu.router.select(request(model, "", Scope.SCOPE_REGION)));
    assertThat(regional.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(reason(regional)).isEqualTo(RoutingError.MODEL_NOT_IN_REGION);
    assertThat(regional.getStatus().getDescription()).contains("region eu").contains("us").contains("GLOBAL");
    assertThat(reason(failure(eu.router.book(request(model, "r1", Scope.SCOPE_REGION)))))
        .isEqualTo(RoutingError.MODEL_NOT_IN_REGION);
    assertThat(us.state(model).getBookingsCount()).isEqualTo(1);

    HttpResponse<String> pools = eu.managementGet("/models/pools?model=org%2Fus-only");
    assertThat(pools.statusCode()).isEqualTo(200);
    assertThat(pools.body()).startsWith("[").contains("\"region\": \"us\"").contains("\"routerEndpoints\"");

    BookingRef ref = BookingRef.newBuilder().setModel(model).setRequestId("g1").setAttempt(booking.getAttempt())
        .setRegion(booking.getRegion()).build();
    assertThat(join(eu.router.renew(ref)).getApplied()).isTrue();
    assertThat(join(eu.router.markPrefillDone(ref)).getApplied()).isTrue();
    assertThat(join(eu.router.release(ref)).getApplied()).isTrue();
    assertThat(us.state(model).getBookingsCount()).isZero();
    assertThat(join(eu.router.release(ref)).getApplied()).isFalse();
  }

  @Test
  void aWorkerRegisteredWithAnotherRegionJoinsThatRegionsPool() {
    String model = "org/registered-across";
    join(us.workers.register(worker(model, "w-eu").setRegion("eu").build()));
    ModelState inEu = eu.state(model);
    assertThat(inEu.getRegion()).isEqualTo("eu");
    assertThat(inEu.getWorkersList()).extracting(w -> w.getConfig().getWorkerId()).containsExactly("w-eu");
    assertThat(us.node.cluster().client(model).isKnown()).as("us keeps no view of eu's pool").isFalse();
  }

  @Test
  void badOrUnknownRegionsAreRejectedAndChangeNothing() {
    String model = "org/bad-regions";
    join(us.workers.register(worker(model, "w-us").build()));
    Booking booking = join(us.router.book(request(model, "b1", Scope.SCOPE_REGION)));
    BookingRef.Builder ref = BookingRef.newBuilder().setModel(model).setRequestId("b1")
        .setAttempt(booking.getAttempt());

    StatusRuntimeException tooLong = failure(us.router.release(ref.setRegion("r".repeat(257)).build()));
    assertThat(tooLong.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(reason(tooLong)).isEqualTo(RoutingError.FIELD_TOO_LONG);
    StatusRuntimeException nowhere = failure(us.router.release(ref.setRegion("nowhere").build()));
    assertThat(nowhere.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(reason(nowhere)).isEqualTo(RoutingError.REGION_UNREACHABLE);
    assertThat(nowhere.getStatus().getDescription()).contains("nowhere").contains(model);
    StatusRuntimeException workerTooLong = failure(us.workers.register(
        worker(model, "w-long").setRegion("r".repeat(257)).build()));
    assertThat(reason(workerTooLong)).isEqualTo(RoutingError.FIELD_TOO_LONG);
    assertThat(us.state(model).getBookingsCount()).isEqualTo(1);
    assertThat(us.state(model).getWorkersCount()).isEqualTo(1);
    // the region named as this node's own is the regional path
    assertThat(join(us.router.release(ref.setRegion("us").build())).getApplied()).isTrue();
  }

  @Test
  void aGlobalBookToARegionThatDoesNotAnswerEndsRegionUnreachableAndLeavesNothing() {
    String model = "org/eu-dark";
    join(eu.workers.register(worker(model, "w-eu").build()));
    awaitPool(us, model, "eu");
    SelectionRequest request = new SelectionRequest(model, "dark-1", null, 1600, 0, null, null, Set.of(), 0, null,
        null, null);
    EU_GATE.dropBooks(true);
    try {
      Throwable failed = org.assertj.core.api.Assertions.catchThrowable(
          () -> us.node.cluster().client(model, "eu").book(request, Duration.ofMillis(500)).join());
      assertThat(failed).isInstanceOf(CompletionException.class).cause().isInstanceOf(RoutingException.class);
      RoutingError error = ((RoutingException) failed.getCause()).error();
      assertThat(error.code()).isEqualTo(RoutingError.Code.UNAVAILABLE);
      assertThat(error.reason()).isEqualTo(RoutingError.REGION_UNREACHABLE);
      assertThat(error.message()).contains("eu").contains(model);
    } finally {
      EU_GATE.dropBooks(false);
    }
    assertThat(eu.state(model).getBookingsCount()).isZero();
    // the region answers again: the same call books there
    Booking booking = join(us.router.book(request(model, "dark-2", Scope.SCOPE_GLOBAL)));
    assertThat(booking.getRegion()).isEqualTo("eu");
    assertThat(eu.state(model).getBookingsList()).extracting(b -> b.getRequestId()).containsExactly("dark-2");
  }

  /** Global Books of a region from another one's node go through that node's relay, each answered once. */
  @Test
  void concurrentGlobalBooksFromAnotherRegionAreEachAnsweredOnceWithTheirOwnBooking() {
    String model = "org/eu-relayed";
    for (String w : List.of("w-eu-1", "w-eu-2", "w-eu-3")) {
      join(eu.workers.register(worker(model, w).build()));
    }
    awaitPool(us, model, "eu");
    var client = us.node.cluster().client(model, "eu");
    int books = 200;
    List<java.util.concurrent.CompletableFuture<io.kvrouter.core.admission.BookingAnswer>> calls =
        new java.util.ArrayList<>();
    for (int i = 0; i < books; i++) {
      calls.add(client.book(new SelectionRequest(model, "x-" + i, null, 1600, 0, null, null, Set.of(), 0, null, null,
          null), Duration.ofSeconds(20)));
    }
    List<String> answered = new java.util.ArrayList<>();
    for (int i = 0; i < books; i++) {
      var answer = calls.get(i).join();
      assertThat(answer.requestId()).as("call %d's answer", i).isEqualTo("x-" + i);
      answered.add(answer.requestId());
    }
    assertThat(us.node.cluster().bookRelay().pending()).as("relayed Books unanswered").isZero();
    assertThat(eu.state(model).getBookingsList()).extracting(b -> b.getRequestId())
        .containsExactlyInAnyOrderElementsOf(answered);
    for (int i = 0; i < books; i++) {
      var answer = calls.get(i).join();
      assertThat(join(client.release(answer.requestId(), answer.attempt(), Duration.ofSeconds(10)))
          .applied()).isTrue();
    }
    assertThat(eu.state(model).getBookingsCount()).isZero();
  }
}
