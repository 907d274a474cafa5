package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.BookingState;
import io.kvrouter.api.v1.ExplainRequest;
import io.kvrouter.api.v1.Explanation;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.QueueClassState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WaitingBook;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The admission queue over real gRPC (grpc-java's own client against a node started with {@code Main.init}, netty
 * binding): the new RouteRequest fields reach the queue, a queued Book whose deadline passes and one whose caller
 * cancels leave nothing behind, a class over its limit answers RESOURCE_EXHAUSTED QUEUE_LIMIT with the limit's
 * trailers, and the state route, explain and /metrics show the queue.
 */
class AdmissionUnderPressureTest {
  private static TestRouter router;
  private static ManagedChannel channel;
  private static RouterGrpc.RouterBlockingStub blocking;
  private static RouterGrpc.RouterFutureStub async;

  @BeforeAll
  static void start() {
    router = TestRouter.start("kvrouter.admission.expiry-interval = 100ms");
    channel = ManagedChannelBuilder.forAddress("127.0.0.1", router.node.grpcPort()).usePlaintext().build();
    blocking = RouterGrpc.newBlockingStub(channel);
    async = RouterGrpc.newFutureStub(channel);
  }

  @AfterAll
  static void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    router.close();
  }

  /** A model of one worker whose rank is busy with any prefill: a holder booked, every further Book waits. */
  private static Booking modelWithAHolder(String model, String... parameters) {
    join(router.workers.register(worker(model, "w1").build()));
    SetPolicyRequest.Builder policy = SetPolicyRequest.newBuilder().setModel(model).setPolicy("kv")
        .putParameters("queue_prefill_tokens_threshold", "0");
    for (int i = 0; i < parameters.length; i += 2) {
      policy.putParameters(parameters[i], parameters[i + 1]);
    }
    join(router.admin.setPolicy(policy.build()));
    return blocking.withDeadlineAfter(5, TimeUnit.SECONDS).book(request(model, "holder").build());
  }

  private static RouteRequest.Builder request(String model, String requestId) {
    return RouteRequest.newBuilder().setModel(model).setRequestId(requestId).setIslTokens(64);
  }

  private static BookingRef ref(String model, Booking booking) {
    return BookingRef.newBuilder().setModel(model).setRequestId(booking.getRequestId())
        .setAttempt(booking.getAttempt()).build();
  }

  private static void markPrefillDone(String model, Booking booking) {
    assertThat(blocking.markPrefillDone(ref(model, booking)).getApplied()).isTrue();
  }

  @Test
  void aQueuedBookWhoseDeadlinePassesLeavesNothingBehind() {
    String model = "pressure/deadline";
    Booking holder = modelWithAHolder(model);
    StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class, () ->
        blocking.withDeadlineAfter(300, TimeUnit.MILLISECONDS).book(request(model, "late").build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
    await().atMost(Duration.ofSeconds(5)).until(() -> router.state(model).getPending() == 0);
    markPrefillDone(model, holder);
    assertThat(blocking.release(ref(model, holder)).getApplied()).isTrue();
    ModelState state = router.state(model);
    assertThat(state.getBookingsList()).isEmpty();
    // its caller's ask timed out and cancelled it, or the expiry check shed it first: one of the two, once
    assertThat(state.getQueue().getClasses(0).getRejectionsMap()).containsAnyOf(Map.entry("CANCELLED", 1L),
        Map.entry("QUEUE_DEADLINE_EXCEEDED", 1L)).hasSize(1);
  }

  @Test
  void aQueuedBookItsCallerCancelsLeavesNothingBehind() {
    String model = "pressure/cancel";
    Booking holder = modelWithAHolder(model);
    ListenableFuture<Booking> waiting = async.withDeadlineAfter(30, TimeUnit.SECONDS)
        .book(request(model, "gives-up").build());
    await().atMost(Duration.ofSeconds(5)).until(() -> router.state(model).getPending() == 1);
    waiting.cancel(true);
    await().atMost(Duration.ofSeconds(5)).until(() -> router.state(model).getPending() == 0);
    markPrefillDone(model, holder);
    assertThat(router.state(model).getBookingsList()).extracting(BookingState::getRequestId)
        .containsExactly("holder");
    assertThat(blocking.release(ref(model, holder)).getApplied()).isTrue();
  }

  @Test
  void strictPriorityAndPolicyClassReachTheQueueAndTheQueueIsVisible() throws Exception {
    String model = "pressure/visible";
    Booking holder = modelWithAHolder(model, "class.gold", "quantum=4096", "queue_aging_ms", "60000");
    ListenableFuture<Booking> low = async.withDeadlineAfter(30, TimeUnit.SECONDS)
        .book(request(model, "low").setPolicyClass("gold").build());
    ListenableFuture<Booking> high = async.withDeadlineAfter(30, TimeUnit.SECONDS)
        .book(request(model, "high").setPolicyClass("gold").setStrictPriority(3).setPriority(1).build());
    await().atMost(Duration.ofSeconds(5)).until(() -> router.state(model).getPending() == 2);

    ModelState state = router.state(model);
    QueueClassState gold = state.getQueue().getClassesList().stream().filter(c -> c.getName().equals("gold"))
        .findFirst().orElseThrow();
    assertThat(gold.getDepth()).isEqualTo(2);
    assertThat(gold.getQuantum()).isEqualTo(4096);
    assertThat(state.getQueue().getAgingMs()).isEqualTo(60_000);
    assertThat(state.getQueue().getWaitingList()).extracting(WaitingBook::getRequestId, WaitingBook::getReason)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("low", "ALL_BUSY"),
            org.assertj.core.groups.Tuple.tuple("high", "BACKLOG"));
    HttpResponse<String> route = router.managementGet("/models/state?model=pressure%2Fvisible");
    assertThat(route.body()).contains("\"queue\"", "\"name\": \"gold\"", "\"requestId\": \"high\"");

    // an advisory Select meanwhile answers a rank (both views are busy) and takes no queue slot
    Selection advisory = blocking.select(request(model, "").build());
    assertThat(advisory.getWorker().getWorkerId()).isEqualTo("w1");
    assertThat(router.state(model).getPending()).isEqualTo(2);

    markPrefillDone(model, holder); // lets one go: the higher tier, though it came later
    Booking first = high.get(5, TimeUnit.SECONDS);
    assertThat(first.getPolicyClass()).isEqualTo("gold");
    assertThat(first.getQueuedMicros()).isPositive();
    assertThat(low.isDone()).isFalse();
    markPrefillDone(model, first);
    Booking second = low.get(5, TimeUnit.SECONDS);

    Explanation explained = join(router.admin.explainRecent(ExplainRequest.newBuilder().setModel(model).build()))
        .getDecisionsList().stream().filter(d -> d.getRequestId().equals("high")).findFirst().orElseThrow();
    assertThat(explained.getQueue().getPolicyClass()).isEqualTo("gold");
    assertThat(explained.getQueue().getStrictPriority()).isEqualTo(3);
    assertThat(explained.getQueue().getReason()).isEqualTo("BACKLOG");
    assertThat(explained.getQueue().getQueuedAhead()).isEqualTo(1);
    assertThat(explained.getQueue().getDispatchedBy()).isEqualTo("PREFILL_DONE");

    String metrics = router.managementGet("/metrics").body();
    assertThat(metrics).containsPattern("kvrouter_book_queue_wait_seconds_count\\{class=\"gold\",model=\"pressure/visible\"\\} 2(\\.0)?\n");
    assertThat(metrics).containsPattern("kvrouter_queue_class_depth\\{class=\"gold\",model=\"pressure/visible\"\\} 0(\\.0)?\n");
    assertThat(metrics).containsPattern("kvrouter_queue_dispatched_total\\{class=\"gold\",model=\"pressure/visible\"\\} 2(\\.0)?\n");
    for (Booking booking : new Booking[] {holder, first, second}) {
      assertThat(blocking.release(ref(model, booking)).getApplied()).isTrue();
    }
  }

  @Test
  void aClassOverItsLimitAnswersQueueLimitNamingTheLimit() throws Exception {
    String model = "pressure/limit";
    Booking holder = modelWithAHolder(model, "class.batch", "requests_per_worker=1");
    ListenableFuture<Booking> taken = async.withDeadlineAfter(30, TimeUnit.SECONDS)
        .book(request(model, "taken").setPolicyClass("batch").build());
    await().atMost(Duration.ofSeconds(5)).until(() -> router.state(model).getPending() == 1);
    StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class, () ->
        blocking.withDeadlineAfter(5, TimeUnit.SECONDS).book(request(model, "refused").setPolicyClass("batch")
            .build()));
    assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    Metadata trailers = refused.getTrailers();
    assertThat(ReasonTrailer.of(trailers)).isEqualTo("QUEUE_LIMIT");
    assertThat(trailers.get(key("kvrouter-policy-class"))).isEqualTo("batch");
    assertThat(trailers.get(key("kvrouter-limit-kind"))).isEqualTo("requests");
    assertThat(trailers.get(key("kvrouter-limit-current"))).isEqualTo("1");
    assertThat(trailers.get(key("kvrouter-limit"))).isEqualTo("1");
    assertThat(refused.getStatus().getDescription()).contains("'batch'", "requests", "current=1", "limit=1");
    // a bad value of the new fields changes nothing either
    StatusRuntimeException tooHigh = catchThrowableOfType(StatusRuntimeException.class, () ->
        blocking.book(request(model, "bad").setStrictPriority(70_000).build()));
    assertThat(tooHigh.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(ReasonTrailer.of(tooHigh.getTrailers())).isEqualTo("INVALID_SIZE");

    String metrics = router.managementGet("/metrics").body();
    assertThat(metrics).containsPattern(
        "kvrouter_queue_rejections_total\\{class=\"batch\",model=\"pressure/limit\",reason=\"QUEUE_LIMIT_REQUESTS\"\\} 1(\\.0)?\n");
    assertThat(metrics).containsPattern(
        "kvrouter_rejections_total\\{method=\"Book\",reason=\"QUEUE_LIMIT\",status=\"RESOURCE_EXHAUSTED\"\\} 1(\\.0)?\n");
    markPrefillDone(model, holder);
    Booking booked = taken.get(5, TimeUnit.SECONDS);
    assertThat(blocking.release(ref(model, booked)).getApplied()).isTrue();
    assertThat(blocking.release(ref(model, holder)).getApplied()).isTrue();
    assertThat(router.state(model).getBookingsList()).isEmpty();
  }

  private static Metadata.Key<String> key(String name) {
    return Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER);
  }
}
