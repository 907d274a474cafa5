package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.server.transport.Binding;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** Bad input over real gRPC: the status and reason of DESIGN.md §3, and the model's state left as it was. */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class GrpcBadInputTest {
  private static final String MODEL = "bad-input";
  private static TestRouter router;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding) {
    router = TestRouter.start(binding, "kvrouter.grpc.max-message-bytes = 1048576");
    join(router.workers.register(worker(MODEL, "w1").build()));
    join(router.workers.register(worker(MODEL, "w2").build()));
    join(router.router.book(RouteRequest.newBuilder().setModel(MODEL).setRequestId("live").setIslTokens(64).build()));
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    router.close();
  }

  private static void rejects(Supplier<CompletionStage<?>> call, Status.Code code, String expectedReason) {
    ModelState before = router.state(MODEL);
    StatusRuntimeException e = failure(call.get());
    assertThat(e.getStatus().getCode()).as(e.toString()).isEqualTo(code);
    assertThat(reason(e)).as(e.toString()).isEqualTo(expectedReason);
    assertThat(e.getStatus().getDescription()).isNotBlank();
    assertThat(router.state(MODEL)).as("state unchanged").isEqualTo(before);
  }

  private static RouteRequest.Builder select() {
    return RouteRequest.newBuilder().setModel(MODEL).setIslTokens(64);
  }

  @Test
  void emptyModel() {
    rejects(() -> router.router.select(select().setModel("").build()), Status.Code.INVALID_ARGUMENT, "EMPTY_MODEL");
    rejects(() -> router.router.book(select().setModel("").setRequestId("x").build()),
        Status.Code.INVALID_ARGUMENT, "EMPTY_MODEL");
    rejects(() -> router.workers.register(worker("", "w9").build()), Status.Code.INVALID_ARGUMENT, "EMPTY_MODEL");
  }

  @Test
  void unknownModel() {
    rejects(() -> router.router.select(select().setModel("nope").build()), Status.Code.NOT_FOUND, "UNKNOWN_MODEL");
    rejects(() -> router.router.book(select().setModel("nope").setRequestId("x").build()),
        Status.Code.NOT_FOUND, "UNKNOWN_MODEL");
  }

  @Test
  void unknownWorker() {
    rejects(() -> router.router.select(select().setPinnedWorker("ghost").build()), Status.Code.NOT_FOUND,
        "UNKNOWN_WORKER");
    rejects(() -> router.workers.reportLoad(LoadReport.newBuilder().setModel(MODEL).setWorkerId("ghost")
        .addRanks(RankLoadReport.newBuilder().setDpRank(0)).build()), Status.Code.NOT_FOUND, "UNKNOWN_WORKER");
    rejects(() -> router.workers.deregister(WorkerKey.newBuilder().setModel(MODEL).setWorkerId("ghost").build()),
        Status.Code.NOT_FOUND, "UNKNOWN_WORKER");
  }

  @Test
  void zeroOrNegativeSizes() {
    rejects(() -> router.workers.register(worker(MODEL, "w9").setDpSize(0).build()), Status.Code.INVALID_ARGUMENT,
        "INVALID_SIZE");
    rejects(() -> router.workers.register(worker(MODEL, "w9").setTotalKvBlocks(0).build()),
        Status.Code.INVALID_ARGUMENT, "INVALID_SIZE");
    // a uint32 of 2^32 - 1 is negative as a Java int
    rejects(() -> router.workers.register(worker(MODEL, "w9").setMaxNumBatchedTokens(-1).build()),
        Status.Code.INVALID_ARGUMENT, "INVALID_SIZE");
    rejects(() -> router.router.select(select().setIslTokens(0).build()), Status.Code.INVALID_ARGUMENT,
        "INVALID_SIZE");
  }

  @Test
  void blockSizeZero() {
    rejects(() -> router.workers.register(worker(MODEL, "w9").setBlockSize(0).build()),
        Status.Code.INVALID_ARGUMENT, "INVALID_BLOCK_SIZE");
  }

  @Test
  void workerReRegisteredWithADifferentConfig() {
    assertThat(join(router.workers.register(worker(MODEL, "w1").build())).getCreated())
        .as("the same registration again is fine").isFalse();
    rejects(() -> router.workers.register(worker(MODEL, "w1").setTotalKvBlocks(2000).build()),
        Status.Code.ALREADY_EXISTS, "WORKER_CONFIG_CONFLICT");
  }

  @Test
  void moreTokensThanTheLimit() {
    RouteRequest.Builder tooMany = select().setIslTokens(0);
    IntStream.range(0, 131_073).forEach(i -> tooMany.addTokenIds(i % 50_000));
    rejects(() -> router.router.select(tooMany.build()), Status.Code.INVALID_ARGUMENT, "TOO_MANY_TOKENS");
    rejects(() -> router.router.select(select().setIslTokens(131_073).build()), Status.Code.INVALID_ARGUMENT,
        "TOO_MANY_TOKENS");
  }

  @Test
  void bodyOverTheMessageLimit() {
    RouteRequest.Builder huge = select().setIslTokens(0);
    IntStream.range(0, 400_000).forEach(i -> huge.addTokenIds(1_000_000 + i));
    assertThat(huge.build().getSerializedSize()).isGreaterThan(1_048_576);
    rejects(() -> router.router.select(huge.build()), Status.Code.RESOURCE_EXHAUSTED, "MESSAGE_TOO_LARGE");
  }

  @Test
  void bookWithoutRequestIdAndMalformedRequests() {
    rejects(() -> router.router.book(select().build()), Status.Code.INVALID_ARGUMENT, "EMPTY_REQUEST_ID");
    rejects(() -> router.router.select(select().addTokenIds(1).addBlockHashes(2).build()),
        Status.Code.INVALID_ARGUMENT, "MALFORMED");
    rejects(() -> router.router.select(select().setPinnedWorker("w1").addAllowedWorkers("w2").build()),
        Status.Code.FAILED_PRECONDITION, "PINNED_WORKER_NOT_ALLOWED");
  }

  @Test
  void releaseOfAnUnknownBookingIsOkAndNotApplied() {
    ModelState before = router.state(MODEL);
    assertThat(join(router.router.release(BookingRef.newBuilder().setModel(MODEL).setRequestId("never")
        .setAttempt(1).build())).getApplied()).isFalse();
    assertThat(join(router.router.release(BookingRef.newBuilder().setModel("gone").setRequestId("never")
        .setAttempt(1).build())).getApplied()).as("even when the model is gone").isFalse();
    assertThat(join(router.router.markPrefillDone(BookingRef.newBuilder().setModel(MODEL).setRequestId("never")
        .setAttempt(1).build())).getApplied()).isFalse();
    assertThat(join(router.router.renew(BookingRef.newBuilder().setModel(MODEL).setRequestId("never")
        .setAttempt(1).build())).getApplied()).isFalse();
    assertThat(router.state(MODEL)).isEqualTo(before);
  }
}
