package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Headers;
import io.grpc.stub.ClientCalls;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.server.TestRouter;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A client's cancel that reaches the router after the Book's answer was written (LateCancels): the frames of a
 * hand-written HTTP/2 client make the crossing deterministic (the answer is read up to its trailers, only then the
 * RST_STREAM is sent). With the window off the same sequence leaves the booking, which shows the cancel really
 * arrived after grpc-java had closed the call. A client that acknowledged the PING the router writes after the
 * answer has read the answer: its reset frees nothing. A grpc-java client that read its answer and cancels afterwards
 * keeps its booking: it sends no RST_STREAM (retries on, its default) or one after that acknowledgement (retries
 * off).
 */
@ParameterizedClass(name = "late-cancel-window = {0}")
@ValueSource(strings = {"2s", "0s"})
class LateCancelTest {
  private static final String BOOK_PATH = "/" + RouterGrpc.getBookMethod().getFullMethodName();
  private static TestRouter router;

  @Parameter
  String window;

  @BeforeParameterizedClassInvocation
  static void start(String window) {
    router = TestRouter.start(Binding.NETTY, "kvrouter.grpc.late-cancel-window = " + window + "\n");
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    router.close();
  }

  /** Why the window-off invocation skips the tests that claim what the window does. */
  private static final String WINDOW_OFF_SKIPS =
      "with the late-cancel window off (0s) no answered Book is watched for a late cancel: the claim is the window's";

  private boolean watching() {
    return !window.equals("0s");
  }

  private String registered(String name) {
    String model = name + "-" + window;
    join(router.workers.register(worker(model, "w1").build()));
    return model;
  }

  private static RouteRequest book(String model, String requestId) {
    return RouteRequest.newBuilder().setModel(model).setRequestId(requestId).setIslTokens(64).build();
  }

  private static Iterable<String> live(String model) {
    return router.state(model).getBookingsList().stream().map(BookingState::getRequestId).toList();
  }

  @Test
  void aCancelThatCrossedTheAnswerFreesTheBooking() throws Exception {
    String model = registered("crossed");
    try (RawHttp2 connection = new RawHttp2(router.node.grpcPort())) {
      int stream = connection.unary(BOOK_PATH, book(model, "crossed").toByteArray());
      Http2Headers trailers = connection.awaitTrailers(stream);
      assertThat(trailers.get("grpc-status")).hasToString("0");
      assertThat(live(model)).containsExactly("crossed");

      connection.reset(stream, RawHttp2.CANCEL);
      if (watching()) {
        await().atMost(Duration.ofSeconds(10)).until(() -> router.state(model).getBookingsCount() == 0);
      } else {
        // frames of one connection are handled in order: once the next Book is answered, the reset was handled
        int next = connection.unary(BOOK_PATH, book(model, "next").toByteArray());
        assertThat(connection.awaitTrailers(next).get("grpc-status")).hasToString("0");
        assertThat(live(model)).containsExactlyInAnyOrder("crossed", "next");
      }
    }
  }

  @Test
  void aCancelAfterTheClientAcknowledgedThePingThatFollowedTheAnswerFreesNothing() throws Exception {
    Assumptions.assumeTrue(watching(), WINDOW_OFF_SKIPS);
    String model = registered("read-past");
    try (RawHttp2 connection = new RawHttp2(router.node.grpcPort())) {
      int stream = connection.unary(BOOK_PATH, book(model, "read-past").toByteArray());
      connection.awaitTrailers(stream);
      long ping;
      do { // grpc-java may send pings of its own first
        ping = connection.awaitPing();
        connection.pingAck(ping);
      } while (!LateCancels.isConfirmation(ping));
      connection.reset(stream, RawHttp2.CANCEL);
      int next = connection.unary(BOOK_PATH, book(model, "next").toByteArray());
      connection.awaitTrailers(next);
      assertThat(live(model)).containsExactlyInAnyOrder("read-past", "next");
    }
  }

  @Test
  void aResetWithAnotherErrorCodeFreesNothing() throws Exception {
    String model = registered("other-code");
    try (RawHttp2 connection = new RawHttp2(router.node.grpcPort())) {
      int stream = connection.unary(BOOK_PATH, book(model, "kept").toByteArray());
      connection.awaitTrailers(stream);
      connection.reset(stream, 0x0); // NO_ERROR
      int next = connection.unary(BOOK_PATH, book(model, "next").toByteArray());
      connection.awaitTrailers(next);
      assertThat(live(model)).containsExactlyInAnyOrder("kept", "next");
    }
  }

  @Test
  void aGrpcJavaClientThatReadItsAnswerAndThenCancelsKeepsItsBooking() throws Exception {
    Assumptions.assumeTrue(watching(), WINDOW_OFF_SKIPS);
    String model = registered("read-then-cancelled");
    assertThat(bookReadThenCancel(model, UnaryOperator.identity())).containsExactlyInAnyOrder("read", "next");
  }

  /**
   * grpc-java with retries disabled resets the stream of a call cancelled after it completed; once it has also read
   * the PING that followed the answer (here: a Select answered on the same connection after it), the reset frees
   * nothing.
   */
  @Test
  void withRetriesDisabledAGrpcJavaClientResetsAStreamItHadReadAndKeepsItsBooking() throws Exception {
    Assumptions.assumeTrue(watching(), WINDOW_OFF_SKIPS);
    String model = registered("no-retry");
    assertThat(bookReadThenCancel(model, ManagedChannelBuilder::disableRetry)).containsExactlyInAnyOrder("read",
        "next");
  }

  /**
   * Books, waits until the client call completed with the answer, cancels that call, then Books again on the same
   * connection (frames are handled in order: a reset sent by the cancel was handled before the second Book). The
   * bookings then live.
   */
  private Iterable<String> bookReadThenCancel(String model, UnaryOperator<ManagedChannelBuilder<?>> options)
      throws Exception {
    ManagedChannel channel = options.apply(ManagedChannelBuilder.forAddress("127.0.0.1", router.node.grpcPort())
        .usePlaintext()).build();
    try {
      ClientCall<RouteRequest, Booking> call = channel.newCall(RouterGrpc.getBookMethod(),
          CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
      CompletableFuture<Status> closed = new CompletableFuture<>();
      CompletableFuture<Booking> answer = new CompletableFuture<>();
      call.start(new ClientCall.Listener<>() {
        @Override
        public void onMessage(Booking message) {
          answer.complete(message);
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
          closed.complete(status);
        }
      }, new Metadata());
      call.request(1);
      call.sendMessage(book(model, "read"));
      call.halfClose();
      assertThat(closed.get(10, TimeUnit.SECONDS).isOk()).isTrue();
      assertThat(answer.getNow(null).getRequestId()).isEqualTo("read");
      // answered after the Book's PING: once the client has this answer, it has acknowledged that PING
      ClientCalls.blockingUnaryCall(channel, RouterGrpc.getSelectMethod(),
          CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), book(model, "select"));
      call.cancel("the caller is done with it", null);
      ClientCalls.blockingUnaryCall(channel, RouterGrpc.getBookMethod(),
          CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), book(model, "next"));
      // CancelBook is told to the model's actor before the second Book's ask, from the same event loop
      return live(model);
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }
}
