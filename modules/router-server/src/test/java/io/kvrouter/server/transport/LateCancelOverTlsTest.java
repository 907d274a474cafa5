package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Headers;
import io.kvrouter.api.PemTls;
import io.kvrouter.api.v1.AdminGrpc;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.WorkersGrpc;
import io.kvrouter.core.testkit.TestCertificates;
import io.kvrouter.server.TestRouter;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * LateCancels over TLS (netty binding): its frame tap must read the decrypted HTTP/2 bytes, behind the SslHandler. A
 * hand-written HTTP/2 client over a TLS socket reads a Book's answer up to its trailers and only then resets the
 * stream, as {@link LateCancelTest} does in plaintext; the booking is freed.
 */
class LateCancelOverTlsTest {
  private static final String BOOK_PATH = "/" + RouterGrpc.getBookMethod().getFullMethodName();
  private static final TestCertificates certs = TestCertificates.shared();
  private static TestRouter router;
  private static ManagedChannel channel;

  @BeforeAll
  static void start() throws Exception {
    router = TestRouter.start(Binding.NETTY,
        "kvrouter.grpc.late-cancel-window = 2s\n" + certs.routerTlsConfig(false));
    channel = SecurityTest.channel(router.node.grpcPort(), certs.ca, null, null);
  }

  @AfterAll
  static void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    router.close();
  }

  private static int bookings(String model) {
    return AdminGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
        .getModelState(ModelStateRequest.newBuilder().setModel(model).build()).getBookingsCount();
  }

  @Test
  void aCancelThatCrossedTheAnswerOverTlsFreesTheBooking() throws Exception {
    String model = "crossed-tls";
    WorkersGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
        .register(worker(model, "w1").build());
    RouteRequest book = RouteRequest.newBuilder().setModel(model).setRequestId("crossed").setIslTokens(64).build();
    try (RawHttp2 connection = RawHttp2.overTls(router.node.grpcPort(),
        PemTls.context(null, PemTls.trustManagers(certs.ca)))) {
      int stream = connection.unary(BOOK_PATH, book.toByteArray());
      Http2Headers trailers = connection.awaitTrailers(stream);
      assertThat(trailers.get("grpc-status")).hasToString("0");
      assertThat(bookings(model)).isEqualTo(1);

      connection.reset(stream, RawHttp2.CANCEL);
      await().atMost(Duration.ofSeconds(10)).until(() -> bookings(model) == 0);
    }
  }
}
