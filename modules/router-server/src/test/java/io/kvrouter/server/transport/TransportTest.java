package io.kvrouter.server.transport;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthCheckResponse;
import io.kvrouter.api.health.v1.HealthGrpc;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.server.TestRouter;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What both bindings must serve the same way: reflection, health, non-ASCII error messages, compressed calls, and
 * our statuses for bodies that do not parse.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class TransportTest {
  private static final String MODEL = "transport";
  private static TestRouter router;
  private static RawGrpc raw;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding) {
    router = TestRouter.start(binding);
    raw = new RawGrpc(router.node.grpcPort());
    join(router.workers.register(worker(MODEL, "w1").build()));
  }

  @AfterParameterizedClassInvocation
  static void stop() throws Exception {
    raw.close();
    router.close();
  }

  private static final io.grpc.MethodDescriptor<RouteRequest, Selection> SELECT = RouterGrpc.getSelectMethod();
  private static final io.grpc.MethodDescriptor<HealthCheckRequest, HealthCheckResponse> HEALTH_CHECK =
      HealthGrpc.getCheckMethod();

  @Test
  void reflectionListsEveryServiceAndDescribesThem() throws Exception {
    assertThat(raw.listServices()).contains("kvrouter.v1.Router", "kvrouter.v1.Workers", "kvrouter.v1.Admin",
        "grpc.health.v1.Health");
    List<FileDescriptorProto> router = raw.filesContaining("kvrouter.v1.Router");
    assertThat(router).anySatisfy(file -> {
      assertThat(file.getName()).isEqualTo("kvrouter/v1/router.proto");
      assertThat(file.getServiceList()).anySatisfy(service -> {
        assertThat(service.getName()).isEqualTo("Router");
        assertThat(service.getMethodList()).extracting(m -> m.getName())
            .contains("Select", "Book", "Release", "MarkPrefillDone", "Renew");
      });
    });
    // our own health.proto (Java package io.kvrouter.api.health.v1), not grpc-services' copy of the same file name
    assertThat(raw.filesContaining("grpc.health.v1.Health")).anySatisfy(file -> {
      assertThat(file.getName()).isEqualTo("grpc/health/v1/health.proto");
      assertThat(file.getOptions().getJavaPackage()).isEqualTo("io.kvrouter.api.health.v1");
    });
  }

  @Test
  void healthOverAPlainGrpcJavaClient() {
    assertThat(raw.call(HEALTH_CHECK, CallOptions.DEFAULT, HealthCheckRequest.getDefaultInstance()).getStatus())
        .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    assertThatThrownBy(() -> raw.call(HEALTH_CHECK, CallOptions.DEFAULT,
        HealthCheckRequest.newBuilder().setService("nope").build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
  }

  @Test
  void healthWatchStreamsTheCurrentStatus() throws Exception {
    var watch = HealthGrpc.getWatchMethod();
    CompletableFuture<HealthCheckResponse> first = new CompletableFuture<>();
    ClientCall<HealthCheckRequest, HealthCheckResponse> call = raw.channel.newCall(watch,
        CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onMessage(HealthCheckResponse message) {
        first.complete(message);
      }

      @Override
      public void onClose(Status status, io.grpc.Metadata trailers) {
        first.completeExceptionally(status.asRuntimeException(trailers));
      }
    }, new io.grpc.Metadata());
    call.request(1);
    call.sendMessage(HealthCheckRequest.newBuilder().setService("kvrouter.v1.Router").build());
    call.halfClose();
    try {
      assertThat(first.get(10, TimeUnit.SECONDS).getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    } finally {
      call.cancel("seen enough", null);
    }
  }

  @Test
  void aNonAsciiErrorMessageArrivesIntact() {
    // with and without a '%': Pekko gRPC's stock handler mangles the first unless StatusMapping pre-encodes it
    for (String model : new String[] {"modèle-é/ü/漢字", "modèle-é/ü/漢字 100%", "50%25 done"}) {
      StatusRuntimeException e = failure(router.router.select(RouteRequest.newBuilder().setModel(model)
          .setIslTokens(16).build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
      assertThat(reason(e)).isEqualTo("UNKNOWN_MODEL");
      assertThat(e.getStatus().getDescription()).contains("'" + model + "'");
    }
  }

  @Test
  void aGzipCompressedCallIsServed() {
    Selection selection = raw.call(SELECT, CallOptions.DEFAULT.withCompression("gzip"),
        RouteRequest.newBuilder().setModel(MODEL).setIslTokens(64).build());
    assertThat(selection.getWorker().getWorkerId()).isEqualTo("w1");
    StatusRuntimeException e = (StatusRuntimeException) org.assertj.core.api.Assertions.catchThrowable(() ->
        raw.call(SELECT, CallOptions.DEFAULT.withCompression("gzip"),
            RouteRequest.newBuilder().setModel("nope").setIslTokens(64).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(reason(e)).isEqualTo("UNKNOWN_MODEL");
  }

  @Test
  void aBodyThatIsNotAProtobufMessageIsInvalidArgumentMalformed() {
    // field 1 (model, length-delimited) announcing 100 bytes, followed by 2
    assertMalformed(new byte[] {0x0a, 100, 'm', 'x'});
    // a wire type that does not exist (7)
    assertMalformed(new byte[] {0x0f, 1, 2, 3});
    // and the connection still serves
    assertThat(raw.call(SELECT, CallOptions.DEFAULT, RouteRequest.newBuilder().setModel(MODEL).setIslTokens(64)
        .build()).getWorker().getWorkerId()).isEqualTo("w1");
  }

  @Test
  void aStringThatIsNotUtf8IsInvalidArgumentMalformed() {
    // field 1 (model): two bytes that are not UTF-8; proto3 strings must be
    assertMalformed(new byte[] {0x0a, 2, (byte) 0xff, (byte) 0xfe, 0x28, 64});
  }

  @Test
  void rejectedBodiesAreLoggedRateLimitedWithoutStackTraces() {
    Logger logger = (Logger) LoggerFactory.getLogger("io.kvrouter.server.grpc.RejectionLog");
    ListAppender<ILoggingEvent> lines = new ListAppender<>();
    lines.start();
    Level level = logger.getLevel();
    logger.setLevel(Level.INFO);
    logger.addAppender(lines);
    try {
      byte[] garbage = {0x0f, 1, 2, 3};
      for (int i = 0; i < 50; i++) {
        assertMalformed(garbage);
      }
      // rate-limited: once the interval has passed, a line carries the count of those not logged
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200)).until(() -> {
        assertMalformed(garbage);
        return lines.list.stream().anyMatch(line -> line.getFormattedMessage().contains("not logged"));
      });
      assertThat(lines.list.size()).isLessThan(50);
      assertThat(lines.list).allSatisfy(line -> {
        assertThat(line.getThrowableProxy()).isNull();
        assertThat(line.getFormattedMessage()).contains("MALFORMED");
      });
      assertThat(SLF4JBridgeHandler.isInstalled()).as("java.util.logging (grpc-java's) goes to SLF4J").isTrue();
    } finally {
      logger.detachAppender(lines);
      logger.setLevel(level);
    }
  }

  private static void assertMalformed(byte[] body) {
    var rawSelect = SELECT.toBuilder(RawGrpc.BYTES, RawGrpc.BYTES).build();
    StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class,
        () -> raw.call(rawSelect, CallOptions.DEFAULT, body));
    assertThat(e.getStatus().getCode()).as(e.toString()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(reason(e)).isEqualTo("MALFORMED");
  }
}
