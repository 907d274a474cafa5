package io.kvrouter.epp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthGrpc;
import io.kvrouter.core.testkit.TestCertificates;
import io.kvrouter.epp.testkit.EnvoyStream;
import io.kvrouter.epp.testkit.EppNode;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** TLS on the picker's port (Istio's default towards an EPP): a TLS client is answered, a plaintext one is not. */
class EndpointPickerTlsTest {
  private static final TestCertificates certs = TestCertificates.shared();

  @Test
  void aGatewayConnectingWithTlsIsAnsweredAndAPlaintextOneIsRefused() throws Exception {
    try (EppNode node = EppNode.start("""
        kvrouter.epp.tls {
          enabled = on
          cert-chain-file = "%s"
          private-key-file = "%s"
        }
        """.formatted(certs.serverChain, certs.serverKey))) {
      node.register("org/tls", "a", "http://127.0.0.31:8000");
      ManagedChannel tls = NettyChannelBuilder.forAddress("127.0.0.1", node.picker.port())
          .sslContext(GrpcSslContexts.forClient().trustManager(certs.ca.toFile()).build())
          .overrideAuthority("localhost").build();
      ManagedChannel plain = NettyChannelBuilder.forAddress("127.0.0.1", node.picker.port()).usePlaintext().build();
      try (EnvoyStream envoy = EnvoyStream.fullDuplex(tls)) {
        envoy.requestHeaders("/v1/models", Map.of(), true);
        ProcessingResponse answer = envoy.next();
        assertThat(EndpointPickerTest.sets(answer.getRequestHeaders().getResponse().getHeaderMutation()))
            .containsEntry("x-gateway-destination-endpoint", "127.0.0.31:8000");
        Throwable refused = catchThrowable(() -> HealthGrpc.newBlockingStub(plain)
            .withDeadlineAfter(5, TimeUnit.SECONDS).check(HealthCheckRequest.getDefaultInstance()));
        assertThat(Status.fromThrowable(refused).getCode()).isIn(Status.Code.UNAVAILABLE, Status.Code.INTERNAL);
      } finally {
        tls.shutdownNow();
        plain.shutdownNow();
      }
    }
  }
}
