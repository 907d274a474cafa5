package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.KvEvent;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.KvRemoved;
import io.kvrouter.api.v1.KvStored;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.StoredBlock;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.server.transport.Binding;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Bad input over real gRPC: the status and reason of each (docs/architecture.md, "Errors"; README, "Limits"), and the
 * model's state left as it was.
 */
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
    ModelState before = modelState();
    StatusRuntimeException e = failure(call.get());
    assertThat(e.getStatus().getCode()).as(e.toString()).isEqualTo(code);
    assertThat(reason(e)).as(e.toString()).isEqualTo(expectedReason);
    assertThat(e.getStatus().getDescription()).isNotBlank();
    assertThat(modelState()).as("state unchanged").isEqualTo(before);
  }

  /**
   * The model's state but this node's replication staleness (the owner's seq moves on with every change it sends) and
   * its pool summaries (republished every summary interval, their age moving on with every read).
   */
  private static ModelState modelState() {
    return router.state(MODEL).toBuilder().clearStaleness().clearPools().build();
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
    rejects(() -> router.router.select(select().setPinnedWorker("w1").addExcludedWorkers("w1").build()),
        Status.Code.FAILED_PRECONDITION, "PINNED_WORKER_NOT_ALLOWED");
  }

  @Test
  void releaseOfAnUnknownBookingIsOkAndNotApplied() {
    ModelState before = modelState();
    assertThat(join(router.router.release(BookingRef.newBuilder().setModel(MODEL).setRequestId("never")
        .setAttempt(1).build())).getApplied()).isFalse();
    assertThat(join(router.router.release(BookingRef.newBuilder().setModel("gone").setRequestId("never")
        .setAttempt(1).build())).getApplied()).as("even when the model is gone").isFalse();
    assertThat(join(router.router.markPrefillDone(BookingRef.newBuilder().setModel(MODEL).setRequestId("never")
        .setAttempt(1).build())).getApplied()).isFalse();
    assertThat(join(router.router.renew(BookingRef.newBuilder().setModel(MODEL).setRequestId("never")
        .setAttempt(1).build())).getApplied()).isFalse();
    assertThat(modelState()).isEqualTo(before);
  }

  @Test
  void aWorkerRegistrationOverTheLimits() {
    // each of these once passed validation: a load cell per rank killed the JVM, or an overflowing rank range
    // registered a worker with no ranks
    rejects(() -> router.workers.register(worker(MODEL, "w9").setDpSize(Integer.MAX_VALUE).build()),
        Status.Code.INVALID_ARGUMENT, "TOO_MANY_RANKS");
    rejects(() -> router.workers.register(worker(MODEL, "w9").setDpSize(1025).build()),
        Status.Code.INVALID_ARGUMENT, "TOO_MANY_RANKS");
    rejects(() -> router.workers.register(worker(MODEL, "w9").setDpStart(Integer.MAX_VALUE).setDpSize(2).build()),
        Status.Code.INVALID_ARGUMENT, "TOO_MANY_RANKS");
    rejects(() -> router.workers.register(worker(MODEL, "w9").setDpStart(65_535).setDpSize(2).build()),
        Status.Code.INVALID_ARGUMENT, "TOO_MANY_RANKS");
    rejects(() -> router.workers.register(worker("limits-fresh", "w9").setBlockSize(Integer.MAX_VALUE - 1).build()),
        Status.Code.INVALID_ARGUMENT, "INVALID_BLOCK_SIZE");
    rejects(() -> router.workers.register(worker(MODEL, "w9").setTotalKvBlocks((1 << 30) + 1).build()),
        Status.Code.INVALID_ARGUMENT, "INVALID_SIZE");
    rejects(() -> router.workers.register(worker(MODEL, "w".repeat(257)).build()),
        Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    rejects(() -> router.workers.register(worker(MODEL, "w9").setEndpoint("h".repeat(1025)).build()),
        Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    assertThat(join(router.admin.listModels(ListModelsRequest.getDefaultInstance())).getModelsList())
        .doesNotContain("limits-fresh");
  }

  @Test
  void namesAndIdsOverTheirLimitAreRejectedWithABoundedMessage() {
    String huge = "m".repeat(9_000);
    rejects(() -> router.router.select(select().setModel(huge).build()), Status.Code.INVALID_ARGUMENT,
        "FIELD_TOO_LONG");
    StatusRuntimeException e = failure(router.router.select(select().setModel(huge).build()));
    assertThat(e.getStatus().getDescription()).hasSizeLessThan(300).contains("m".repeat(128) + "...");
    rejects(() -> router.router.book(select().setRequestId("r".repeat(257)).build()), Status.Code.INVALID_ARGUMENT,
        "FIELD_TOO_LONG");
    rejects(() -> router.router.select(select().setLoraName("l".repeat(257)).build()), Status.Code.INVALID_ARGUMENT,
        "FIELD_TOO_LONG");
    rejects(() -> router.router.select(select().setCacheSalt("s".repeat(257)).build()),
        Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    rejects(() -> router.router.select(select().setPinnedWorker("p".repeat(257)).build()),
        Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    rejects(() -> router.router.release(BookingRef.newBuilder().setModel(MODEL).setRequestId("r".repeat(257))
        .setAttempt(1).build()), Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    rejects(() -> router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("p".repeat(65))
        .build()), Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    rejects(() -> router.admin.getModelState(ModelStateRequest.newBuilder().setModel(huge).build()),
        Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
  }

  /** An unknown policy (a plug-in nobody registered) and bad kv cost parameters: refused, the model unchanged. */
  @Test
  void unknownPoliciesAndBadCostParametersAreRefused() {
    rejects(() -> router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL)
        .setPolicy("testkit_not_registered").build()), Status.Code.INVALID_ARGUMENT, "UNKNOWN_POLICY");
    for (String[] bad : new String[][] {{"overlap_credit_decay", "-1"}, {"decode_active_request_weight", "NaN"},
        {"shared_cache_multiplier", "lots"}, {"load_bound_factor", "0.5"}, {"prefill_backlog_weight", "-0.1"},
        {"preset", "sglang"}}) {
      rejects(() -> router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("kv")
          .putParameters(bad[0], bad[1]).build()), Status.Code.INVALID_ARGUMENT, "INVALID_POLICY_PARAMETER");
    }
  }

  @Test
  void countsOverTheirLimit() {
    RouteRequest.Builder manyAllowed = select();
    IntStream.range(0, 1025).forEach(i -> manyAllowed.addAllowedWorkers("w" + i));
    rejects(() -> router.router.select(manyAllowed.build()), Status.Code.INVALID_ARGUMENT, "TOO_MANY_ITEMS");
    RouteRequest.Builder manyExcluded = select();
    IntStream.range(0, 1025).forEach(i -> manyExcluded.addExcludedWorkers("w" + i));
    rejects(() -> router.router.select(manyExcluded.build()), Status.Code.INVALID_ARGUMENT, "TOO_MANY_ITEMS");
    SetPolicyRequest.Builder manyParameters = SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("kv");
    IntStream.range(0, 33).forEach(i -> manyParameters.putParameters("p" + i, "1"));
    rejects(() -> router.admin.setPolicy(manyParameters.build()), Status.Code.INVALID_ARGUMENT, "TOO_MANY_ITEMS");
    rejects(() -> router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("kv")
        .putParameters("seed", "1".repeat(257)).build()), Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    KvStored.Builder stored = KvStored.newBuilder();
    IntStream.range(0, 8193).forEach(i -> stored.addBlocks(StoredBlock.newBuilder().setBlockHash(i)
        .setTokensHash(i)));
    rejects(() -> router.workers.publishKvEvents(KvEventBatch.newBuilder().setModel(MODEL).setWorkerId("w1")
        .addEvents(KvEvent.newBuilder().setEventId(1).setStored(stored)).build()), Status.Code.INVALID_ARGUMENT,
        "TOO_MANY_ITEMS");
    rejects(() -> router.router.select(select().setExpectedOutputTokens(1_048_577).build()),
        Status.Code.INVALID_ARGUMENT, "TOO_MANY_TOKENS");
  }

  @Test
  void enumValuesTheContractDoesNotDefine() {
    rejects(() -> router.router.book(select().setRequestId("scope-99").setScopeValue(99).build()),
        Status.Code.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE");
    rejects(() -> router.router.select(select().setScopeValue(99).build()), Status.Code.INVALID_ARGUMENT,
        "UNKNOWN_ENUM_VALUE");
    rejects(() -> router.workers.register(worker(MODEL, "w9").setRoleValue(99).build()),
        Status.Code.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE");
    rejects(() -> router.workers.publishKvEvents(KvEventBatch.newBuilder().setModel(MODEL).setWorkerId("w1")
        .addEvents(KvEvent.newBuilder().setEventId(1).setStored(KvStored.newBuilder().setStorageTierValue(99)
            .addBlocks(StoredBlock.newBuilder().setBlockHash(1).setTokensHash(1)))).build()),
        Status.Code.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE");
    rejects(() -> router.workers.publishKvEvents(KvEventBatch.newBuilder().setModel(MODEL).setWorkerId("w1")
        .addEvents(KvEvent.newBuilder().setEventId(1).setRemoved(KvRemoved.newBuilder().setStorageTierValue(7)
            .addBlockHashes(1))).build()), Status.Code.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE");
  }

  /** A session mode the contract does not define, a session id too long, session parameters out of range. */
  @Test
  void badSessionInput() {
    rejects(() -> router.router.book(select().setRequestId("mode-99").setSessionId("s").setSessionModeValue(99)
        .build()), Status.Code.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE");
    rejects(() -> router.router.select(select().setSessionId("s").setSessionModeValue(7).build()),
        Status.Code.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE");
    rejects(() -> router.router.book(select().setRequestId("long-session").setSessionId("s".repeat(257)).build()),
        Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    for (String[] bad : new String[][] {{"session_max_bindings", "1000001"}, {"session_max_bindings", "0"},
        {"session_mode", "sticky"}, {"session_ttl_ms", "-5"}, {"session_soft_factor", "2"}}) {
      rejects(() -> router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL)
          .putParameters(bad[0], bad[1]).build()), Status.Code.INVALID_ARGUMENT, "INVALID_POLICY_PARAMETER");
    }
  }

  /** Taints in neither key nor key=value syntax, too many, a multiplier out of range, required taints nobody has. */
  @Test
  void badTaints() {
    rejects(() -> router.workers.register(worker(MODEL, "w9").addTaints("gpu=h100=2").build()),
        Status.Code.INVALID_ARGUMENT, "INVALID_TAINT");
    rejects(() -> router.router.book(select().setRequestId("taint-1").addRequiredTaints("has space").build()),
        Status.Code.INVALID_ARGUMENT, "INVALID_TAINT");
    rejects(() -> router.router.select(select().addPreferredTaints("-x").build()), Status.Code.INVALID_ARGUMENT,
        "INVALID_TAINT");
    RouteRequest.Builder many = select().setRequestId("taint-2");
    IntStream.range(0, 33).forEach(i -> many.addRequiredTaints("t" + i));
    rejects(() -> router.router.book(many.build()), Status.Code.INVALID_ARGUMENT, "TOO_MANY_ITEMS");
    rejects(() -> router.router.book(select().setRequestId("taint-3").addPreferredTaints("gpu")
        .setPreferredTaintMultiplier(2).build()), Status.Code.INVALID_ARGUMENT, "MALFORMED");
    rejects(() -> router.router.book(select().setRequestId("taint-4").addRequiredTaints("gpu=h100").build()),
        Status.Code.FAILED_PRECONDITION, "REQUIRED_TAINTS_UNMET");
  }

  @Test
  void anEmptyWorkerIdIsTheSameErrorForRegisterAndDeregister() {
    rejects(() -> router.workers.register(worker(MODEL, "").build()), Status.Code.INVALID_ARGUMENT,
        "EMPTY_WORKER_ID");
    rejects(() -> router.workers.deregister(WorkerKey.newBuilder().setModel(MODEL).setWorkerId("").build()),
        Status.Code.INVALID_ARGUMENT, "EMPTY_WORKER_ID");
  }

  @Test
  void aCallWithAHugeNameDoesNotHurtItsNeighboursOnTheConnection() {
    // one client, one channel: the rejected calls and the good ones share a connection
    String huge = "x".repeat(100_000);
    List<CompletableFuture<?>> bad = new ArrayList<>();
    List<CompletableFuture<Selection>> good = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      bad.add(router.router.select(select().setModel(huge).build()).toCompletableFuture());
      good.add(router.router.select(select().build()).toCompletableFuture());
    }
    for (CompletableFuture<Selection> call : good) {
      assertThat(join(call).getWorker().getWorkerId()).startsWith("w");
    }
    for (CompletableFuture<?> call : bad) {
      StatusRuntimeException e = failure(call);
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(reason(e)).isEqualTo("FIELD_TOO_LONG");
    }
  }
}
