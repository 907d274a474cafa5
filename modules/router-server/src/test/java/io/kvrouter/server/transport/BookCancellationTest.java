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
 * Deadlines and cancellation reach the admission path on every binding. A probe around the admission actor holds
 * every Book back so that the caller's deadline passes, or the caller cancels, before the Book is made.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class BookCancellationTest {
  private static final io.grpc.MethodDescriptor<RouteRequest, Booking> BOOK = RawGrpc.unary("kvrouter.v1.Router",
      "Book", RouteRequest.getDefaultInstance(), Booking.getDefaultInstance());
  private static final io.grpc.Metadata.Key<String> REASON = TestRouter.REASON;
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
    // once the held Book reaches admission (after the probe's 400 ms) it must book nothing
    await().pollDelay(Duration.ofMillis(600)).atMost(Duration.ofSeconds(5)).untilAsserted(() ->
        assertThat(router.state(model).getBookingsList()).isEmpty());
  }

  @Test
  void aBookTheClientCancelsBooksNothing() {
    Assumptions.assumeTrue(binding == Binding.NETTY,
        "only grpc-java tells the handler that its call was cancelled; on the Pekko bindings the Book completes "
            + "and stays booked until released or its lease expires");
    String model = "cancelled";
    join(router.workers.register(worker(model, "w1").build()));
    ClientCall<RouteRequest, Booking> call = raw.channel.newCall(BOOK, CallOptions.DEFAULT);
    call.start(new ClientCall.Listener<>() {}, new Metadata());
    call.sendMessage(book(model, "abandoned"));
    call.halfClose();
    call.request(1);
    await().pollDelay(Duration.ofMillis(100)).until(() -> true);
    call.cancel("the caller gave up", null);
    // the probe is held back after the abandoned Book: once it is booked, the abandoned one has been answered
    raw.call(BOOK, CallOptions.DEFAULT, book(model, "probe"));
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(router.state(model).getBookingsList())
        .extracting(BookingState::getRequestId).containsExactly("probe"));
  }
}
