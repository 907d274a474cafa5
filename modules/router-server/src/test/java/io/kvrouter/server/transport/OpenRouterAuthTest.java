package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.typesafe.config.ConfigFactory;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import io.kvrouter.api.BearerToken;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.WorkersGrpc;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.server.TestRouter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Auth on with {@code router-requires-token = off}, tokens read from a file, in plaintext: Router answers without a
 * token while Workers still requires one; and the configuration's own errors.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class OpenRouterAuthTest {
  private static TestRouter router;
  private static ManagedChannel channel;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding, @TempDir Path dir) throws IOException {
    Path tokens = Files.writeString(dir.resolve("tokens"), """
        # fleet agents
        fleet-token-0123456789   workers

        ops-token-0123456789 admin,workers
        """);
    router = TestRouter.start(binding, """
        kvrouter.auth {
          enabled = on
          router-requires-token = off
          tokens-file = "%s"
        }
        """.formatted(tokens));
    channel = ManagedChannelBuilder.forAddress("127.0.0.1", router.node.grpcPort()).usePlaintext().build();
  }

  @AfterParameterizedClassInvocation
  static void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    router.close();
  }

  @Test
  void routerIsOpenWhileWorkersRequiresItsRole() {
    String model = "open-" + binding.configName();
    StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
        () -> WorkersGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
            .register(worker(model, "w1").build()));
    assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
    assertThat(ReasonTrailer.of(refused.getTrailers())).isEqualTo(RoutingError.MISSING_TOKEN);

    Metadata headers = new Metadata();
    headers.put(BearerToken.KEY, BearerToken.headerValue("fleet-token-0123456789"));
    WorkersGrpc.newBlockingStub(channel).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers))
        .withDeadlineAfter(10, TimeUnit.SECONDS).register(worker(model, "w1").build());
    var selection = RouterGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
        .select(RouteRequest.newBuilder().setModel(model).setRequestId("r").setIslTokens(16).build());
    assertThat(selection.getWorker().getWorkerId()).isEqualTo("w1");
  }

  @Test
  void authWithoutTokensOrWithABadFileDoesNotStart(@TempDir Path dir) throws IOException {
    assertThatThrownBy(() -> TokenAuth.fromConfig(ConfigFactory.parseString("kvrouter.auth.enabled = on")
        .withFallback(ConfigFactory.load()))).hasMessageContaining("no token is configured");
    Path bad = Files.writeString(dir.resolve("bad"), "only-a-token\n");
    assertThatThrownBy(() -> TokenAuth.readTokensFile(bad)).hasMessageContaining("line 1");
    Path badRole = Files.writeString(dir.resolve("bad-role"), "t root\n");
    assertThatThrownBy(() -> TokenAuth.readTokensFile(badRole)).hasMessageContaining("unknown role 'root'");
    assertThat(TokenAuth.fromConfig(ConfigFactory.load())).as("off by default").isNull();
  }
}
