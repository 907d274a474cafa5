package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.server.TestRouter;
import io.kvrouter.cluster.testkit.AdmissionProbes;
import io.kvrouter.core.admission.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Deadlines and cancellation reach the admission path. A probe around the admission actor holds every Book back so
 * that the caller's deadline passes before the Book is made; a cancelled Book is cancelled while it waits in the
 * model's queue.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class BookCancellationTest {
  private static final io.grpc.MethodDescriptor<RouteRequest, Booking> BOOK = RouterGrpc.getBookMethod();
  private static TestRouter router;
  private static RawGrpc raw;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding) {
    // Books wait 400 ms; the server's ask ends 150 ms before the caller's deadline
    router = TestRouter.start(binding, """
        kvrouter.admission.deadline-margin = 150ms
        """, AdmissionProbes.holdingBooks(Clock.SYSTEM, Duration.ofMillis(400)));
    raw = new RawGrpc(router.node.grpcPort());
  }

  @AfterParameterizedClassInvocation
  static void stop() throws Exception {
    raw.close();
    router.close();
  }

  private static RouteRequest book(String model, String requestId) {
    return RouteRequest.newBuilder().setModel(model).setRequestId(requestId).setIslTokens(64).build();
  }

  @Test
  void aBookWhoseDeadlinePassesLeavesNoBooking() {
    String model = "deadline";
    join(router.workers.register(worker(model, "w1").build()));
    StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class, () ->
        ClientCalls.blockingUnaryCall(raw.channel, BOOK,
            CallOptions.DEFAULT.withDeadlineAfter(350, TimeUnit.MILLISECONDS), book(model, "late")));
    // either the server's answer (its ask ends before the deadline: reason ADMISSION_TIMEOUT) or, on a loaded
    // machine, the client's own deadline firing first: which one wins is a race, the status is not
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
    // a probe Book, sent after the answer, is held the same 400 ms: once it is booked, the late Book's hold has
    // ended too, and the late Book must have booked nothing
    raw.call(BOOK, CallOptions.DEFAULT, book(model, "probe"));
    assertThat(router.state(model).getBookingsList()).extracting(BookingState::getRequestId)
        .containsExactly("probe");
  }

  /**
   * The abandoned Book waits in the model's queue (one worker, queueing at any prefill load, and a holder booked
   * first), observed through GetModelState's pending count; only then does the client cancel. The cancellation must
   * reach admission: the queued entry is dropped, and once the holder is released nothing is booked for it.
   */
  @Test
  void aBookTheClientCancelsBooksNothing() {
    Assumptions.assumeTrue(binding == Binding.NETTY,
        "only grpc-java tells the handler that its call was cancelled; on the pekko binding the Book completes "
            + "and stays booked until released or its lease expires");
    String model = "cancelled";
    join(router.workers.register(worker(model, "w1").build()));
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(model).setPolicy("round_robin")
        .putParameters("queue_threshold_frac", "0").build()));
    Booking holder = raw.call(BOOK, CallOptions.DEFAULT, book(model, "holder"));
    ClientCall<RouteRequest, Booking> call = raw.channel.newCall(BOOK, CallOptions.DEFAULT);
    call.start(new ClientCall.Listener<>() {}, new Metadata());
    call.sendMessage(book(model, "abandoned"));
    call.halfClose();
    call.request(1);
    await().atMost(Duration.ofSeconds(10)).until(() -> router.state(model).getPending() == 1);
    call.cancel("the caller gave up", null);
    await().atMost(Duration.ofSeconds(10)).until(() -> router.state(model).getPending() == 0);
    assertThat(join(router.router.release(BookingRef.newBuilder().setModel(model).setRequestId("holder")
        .setAttempt(holder.getAttempt()).build())).getApplied()).isTrue();
    assertThat(router.state(model).getBookingsList()).extracting(BookingState::getRequestId)
        .doesNotContain("abandoned");
  }
}
