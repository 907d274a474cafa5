package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.netty.shaded.io.netty.channel.DefaultEventLoop;
import io.grpc.stub.ServerCallStreamObserver;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.cluster.testkit.AdmissionProbes;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.server.TestRouter;
import io.kvrouter.server.metrics.RouterMetrics;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The netty binding learns that a Book's call was cancelled after the Book was answered but before the answer was
 * written (the call's event loop was busy): the booking must be freed, since the client will never see it. The call
 * is driven on an event loop of the test's own, held busy until the cancel has arrived.
 */
class AbandonedBookTest {
  private static TestRouter router;
  private static NettyCalls calls;

  @BeforeAll
  static void start() {
    // Books are held 200 ms before the actor sees them, so the answer completes on the actor's thread after the
    // handler has returned and its event loop is busy: its write is then queued on that loop
    router = TestRouter.start(Binding.NETTY, "", AdmissionProbes.holdingBooks(Clock.SYSTEM, Duration.ofMillis(200)));
    calls = new NettyCalls(router.node.system(), GrpcServices.create(router.node.cluster(),
        new RequestLimits(131_072), () -> true, RouterMetrics.get(router.node.system())));
  }

  @AfterAll
  static void stop() {
    router.close();
  }

  @Test
  void aBookingAnsweredAfterItsCallWasCancelledIsFreed() throws Exception {
    String model = "abandoned-after-answer";
    join(router.workers.register(worker(model, "w1").build()));
    FakeCall call = new FakeCall();
    DefaultEventLoop loop = new DefaultEventLoop();
    CountDownLatch busy = new CountDownLatch(1);
    try {
      loop.execute(() -> {
        calls.book(RouteRequest.newBuilder().setModel(model).setRequestId("answered").setIslTokens(64).build(),
            call);
        awaitQuietly(busy);
      });
      // the answer is complete once its write is queued behind the busy loop
      await().atMost(Duration.ofSeconds(10)).until(() -> loop.pendingTasks() == 1);
      assertThat(router.state(model).getBookingsList()).extracting(BookingState::getRequestId)
          .containsExactly("answered");
      call.cancelByClient();
      busy.countDown();
      await().atMost(Duration.ofSeconds(10)).until(() -> router.state(model).getBookingsCount() == 0);
      assertThat(call.written).isFalse();
    } finally {
      busy.countDown();
      loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A unary call as grpc-java's server hands it to a handler; the client's cancel is {@link #cancelByClient}. */
  private static final class FakeCall extends ServerCallStreamObserver<Booking> {
    private volatile boolean cancelled;
    private volatile Runnable onCancel;
    volatile boolean written;

    void cancelByClient() {
      cancelled = true;
      if (onCancel != null) {
        onCancel.run();
      }
    }

    @Override
    public boolean isCancelled() {
      return cancelled;
    }

    @Override
    public void setOnCancelHandler(Runnable onCancelHandler) {
      onCancel = onCancelHandler;
    }

    @Override
    public void setCompression(String compression) {}

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void setOnReadyHandler(Runnable onReadyHandler) {}

    @Override
    public void disableAutoInboundFlowControl() {}

    @Override
    public void request(int count) {}

    @Override
    public void setMessageCompression(boolean enable) {}

    @Override
    public void onNext(Booking value) {
      written = true;
    }

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {}
  }
}
