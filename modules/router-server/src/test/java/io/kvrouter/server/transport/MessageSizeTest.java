package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.server.TestRouter;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The two request size limits, scaled down: up to the transport's cap an oversized request gets our
 * MESSAGE_TOO_LARGE; above it the transport answers on its own, and the connection keeps serving either way.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class MessageSizeTest {
  private static final String MODEL = "sizes";
  private static TestRouter router;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding) {
    router = TestRouter.start(binding, """
        kvrouter.grpc.max-message-bytes = 65536
        kvrouter.grpc.transport-max-message-bytes = 262144
        """);
    join(router.workers.register(worker(MODEL, "w1").build()));
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    router.close();
  }

  private static RouteRequest ofBytes(int bytes) {
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(MODEL).setIslTokens(16);
    // a uint64 of 2^62 takes 9 bytes packed
    IntStream.range(0, bytes / 9).forEach(i -> request.addBlockHashes(1L << 62));
    return request.build();
  }

  private void stillServes() {
    assertThat(join(router.router.select(RouteRequest.newBuilder().setModel(MODEL).setIslTokens(16).build()))
        .getWorker().getWorkerId()).isEqualTo("w1");
  }

  @Test
  void overTheLimitButUnderTheTransportCapIsMessageTooLarge() throws Exception {
    RouteRequest request = ofBytes(200_000);
    assertThat(request.getSerializedSize()).isBetween(65_537, 262_000);
    StatusRuntimeException e = failure(router.router.select(request));
    assertThat(e.getStatus().getCode()).as(e.toString()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(reason(e)).isEqualTo("MESSAGE_TOO_LARGE");
    assertThat(e.getStatus().getDescription()).contains("65536 bytes");
    if (binding == Binding.NETTY) {
      // refused by the transport before the service: counted all the same (the pekko binding's generated handler
      // refuses it where the rejection counter does not see it)
      assertThat(router.managementGet("/metrics").body().lines()).anyMatch(line ->
          line.startsWith("kvrouter_rejections_total{") && line.contains("method=\"Select\"")
              && line.contains("reason=\"MESSAGE_TOO_LARGE\"") && line.contains("status=\"RESOURCE_EXHAUSTED\""));
    }
    stillServes();
  }

  @Test
  void overTheTransportCapIsAnsweredByTheTransport() {
    RouteRequest request = ofBytes(600_000);
    StatusRuntimeException e = failure(router.router.select(request));
    assertThat(e.getStatus().getCode()).as(e.toString()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    if (binding == Binding.NETTY) {
      // grpc-java fails the stream itself: no trailer of ours
      assertThat(reason(e)).isNull();
    } else {
      // pekko-http did not fail this request stream (no content-length, as gRPC clients send) at its max content
      // length, so BodyLimit reads it whole, keeping nothing past the limit, and answers as below the cap
      assertThat(reason(e)).isEqualTo("MESSAGE_TOO_LARGE");
    }
    stillServes();
  }
}
