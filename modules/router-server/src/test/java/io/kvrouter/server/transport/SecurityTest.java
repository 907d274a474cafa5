package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.stub.AbstractStub;
import io.grpc.stub.MetadataUtils;
import io.kvrouter.api.BearerToken;
import io.kvrouter.api.PemTls;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthGrpc;
import io.kvrouter.api.v1.AdminGrpc;
import io.kvrouter.api.v1.ExplainRequest;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.WorkersGrpc;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.testkit.TestCertificates;
import io.kvrouter.server.TestRouter;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A router with mutual TLS and tokens with roles, on each binding: clients without the server's CA, without a client
 * certificate or with one from another CA are refused at the handshake; over TLS, calls without a token, with an
 * unknown one or with one lacking the service's role are refused with their status and reason, and change nothing;
 * with the right certificate and token they work.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class SecurityTest {
  private static final String ADMIN = "admin-token-0123456789";
  private static final String FLEET = "fleet-token-0123456789";
  private static final String CLIENT = "client-token-0123456789";
  private static final TestCertificates certs = TestCertificates.shared();
  private static TestRouter router;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding) {
    router = TestRouter.start(binding, certs.routerTlsConfig(true) + """
        kvrouter.auth {
          enabled = on
          tokens = [
            { token = "%s", roles = [admin, workers] }
            { token = "%s", roles = [workers] }
            { token = "%s", roles = [router] }
          ]
        }
        """.formatted(ADMIN, FLEET, CLIENT));
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    router.close();
  }

  /** A TLS channel trusting {@code ca} (null: the JDK's defaults), presenting {@code chain}/{@code key} if given. */
  static ManagedChannel channel(int port, Path ca, Path chain, Path key) throws Exception {
    SslContextBuilder tls = GrpcSslContexts.forClient();
    if (ca != null) {
      tls.trustManager(PemTls.trustManagers(ca));
    }
    if (chain != null) {
      tls.keyManager(PemTls.keyManagers(chain, key));
    }
    return NettyChannelBuilder.forAddress("127.0.0.1", port).sslContext(tls.build()).build();
  }

  private static <S extends AbstractStub<S>> S withToken(S stub, String token) {
    Metadata headers = new Metadata();
    headers.put(BearerToken.KEY, BearerToken.headerValue(token));
    return stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers))
        .withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  private ManagedChannel mutualTls() throws Exception {
    return channel(router.node.grpcPort(), certs.ca, certs.clientChain, certs.clientKey);
  }

  private static void close(ManagedChannel channel) throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private static StatusRuntimeException refused(Runnable call) {
    return catchThrowableOfType(StatusRuntimeException.class, call::run);
  }

  private String model(String name) {
    return name + "-" + binding.configName();
  }

  @Test
  void withTheClientCertificateAndTheRightTokensEveryServiceWorks() throws Exception {
    ManagedChannel channel = mutualTls();
    try {
      String model = model("works");
      withToken(WorkersGrpc.newBlockingStub(channel), FLEET).register(worker(model, "w1").build());
      var selection = withToken(RouterGrpc.newBlockingStub(channel), CLIENT)
          .select(RouteRequest.newBuilder().setModel(model).setRequestId("r1").setIslTokens(64).build());
      assertThat(selection.getWorker().getWorkerId()).isEqualTo("w1");
      var state = withToken(AdminGrpc.newBlockingStub(channel), ADMIN)
          .getModelState(ModelStateRequest.newBuilder().setModel(model).build());
      assertThat(state.getWorkersCount()).isEqualTo(1);
      var explained = withToken(AdminGrpc.newBlockingStub(channel), ADMIN)
          .explainRecent(ExplainRequest.newBuilder().setModel(model).build());
      assertThat(explained.getDecisionsList()).extracting(d -> d.getRequestId()).contains("r1");
    } finally {
      close(channel);
    }
  }

  @Test
  void aCallWithoutATokenIsUnauthenticatedAndChangesNothing() throws Exception {
    ManagedChannel channel = mutualTls();
    try {
      String model = model("no-token");
      StatusRuntimeException e = refused(() -> WorkersGrpc.newBlockingStub(channel)
          .withDeadlineAfter(10, TimeUnit.SECONDS).register(worker(model, "w1").build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
      assertThat(ReasonTrailer.of(e.getTrailers())).isEqualTo(RoutingError.MISSING_TOKEN);
      StatusRuntimeException select = refused(() -> RouterGrpc.newBlockingStub(channel)
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .select(RouteRequest.newBuilder().setModel(model).setRequestId("r").setIslTokens(1).build()));
      assertThat(select.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
      // nothing was registered: the model is unknown to an admin
      StatusRuntimeException state = refused(() -> withToken(AdminGrpc.newBlockingStub(channel), ADMIN)
          .getModelState(ModelStateRequest.newBuilder().setModel(model).build()));
      assertThat(ReasonTrailer.of(state.getTrailers())).isEqualTo(RoutingError.UNKNOWN_MODEL);
      // the refusals before the services count as rejections of their methods
      assertThat(router.managementGet("/metrics").body().lines()).anyMatch(line ->
          line.startsWith("kvrouter_rejections_total{") && line.contains("method=\"Register\"")
              && line.contains("reason=\"MISSING_TOKEN\"") && line.contains("status=\"UNAUTHENTICATED\""));
    } finally {
      close(channel);
    }
  }

  @Test
  void anUnknownTokenIsUnauthenticated() throws Exception {
    ManagedChannel channel = mutualTls();
    try {
      StatusRuntimeException e = refused(() -> withToken(AdminGrpc.newBlockingStub(channel), ADMIN + "x")
          .getModelState(ModelStateRequest.newBuilder().setModel(model("unknown-token")).build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
      assertThat(ReasonTrailer.of(e.getTrailers())).isEqualTo(RoutingError.UNKNOWN_TOKEN);
    } finally {
      close(channel);
    }
  }

  @Test
  void aTokenWithoutTheServicesRoleIsDenied() throws Exception {
    ManagedChannel channel = mutualTls();
    try {
      StatusRuntimeException admin = refused(() -> withToken(AdminGrpc.newBlockingStub(channel), FLEET)
          .getModelState(ModelStateRequest.newBuilder().setModel(model("no-role")).build()));
      assertThat(admin.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
      assertThat(ReasonTrailer.of(admin.getTrailers())).isEqualTo(RoutingError.MISSING_ROLE);
      // a router client may not read other clients' decisions
      StatusRuntimeException explain = refused(() -> withToken(AdminGrpc.newBlockingStub(channel), CLIENT)
          .explainRecent(ExplainRequest.newBuilder().setModel(model("no-role")).build()));
      assertThat(explain.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
      assertThat(ReasonTrailer.of(explain.getTrailers())).isEqualTo(RoutingError.MISSING_ROLE);
      StatusRuntimeException workers = refused(() -> withToken(WorkersGrpc.newBlockingStub(channel), CLIENT)
          .register(worker(model("no-role"), "w1").build()));
      assertThat(workers.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
      assertThat(ReasonTrailer.of(workers.getTrailers())).isEqualTo(RoutingError.MISSING_ROLE);
      StatusRuntimeException router = refused(() -> withToken(RouterGrpc.newBlockingStub(channel), FLEET)
          .select(RouteRequest.newBuilder().setModel(model("no-role")).setRequestId("r").setIslTokens(1).build()));
      assertThat(router.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
    } finally {
      close(channel);
    }
  }

  @Test
  void healthNeedsNoToken() throws Exception {
    ManagedChannel channel = mutualTls();
    try {
      assertThat(HealthGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
          .check(HealthCheckRequest.getDefaultInstance()).getStatusValue()).isEqualTo(1); // SERVING
    } finally {
      close(channel);
    }
  }

  @Test
  void clientsWithoutTheRightCertificatesAreRefusedAtTheHandshake() throws Exception {
    int port = router.node.grpcPort();
    for (Function<Integer, ManagedChannel> client : java.util.List.<Function<Integer, ManagedChannel>>of(
        p -> unchecked(() -> channel(p, certs.ca, null, null)), // no client certificate
        p -> unchecked(() -> channel(p, certs.ca, certs.strangerChain, certs.strangerKey)), // another CA's
        p -> unchecked(() -> channel(p, null, certs.clientChain, certs.clientKey)))) { // server not trusted
      ManagedChannel channel = client.apply(port);
      try {
        StatusRuntimeException e = refused(() -> withToken(AdminGrpc.newBlockingStub(channel), ADMIN)
            .getModelState(ModelStateRequest.newBuilder().setModel(model("handshake")).build()));
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      } finally {
        close(channel);
      }
    }
  }

  private interface ChannelMaker {
    ManagedChannel make() throws Exception;
  }

  private static ManagedChannel unchecked(ChannelMaker maker) {
    try {
      return maker.make();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
