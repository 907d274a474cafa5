package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.BookingState;
import io.kvrouter.api.v1.Disaggregation;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.RankState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerRole;
import io.kvrouter.api.v1.WorkerState;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Prefill/decode pairs and LoRA placement over real gRPC: the answers, the model's state, and bad input. */
class DisaggregationAndLoraGrpcTest {
  private static final String PD = "pd-model";
  private static final String DECODE_ONLY = "decode-only";
  private static final String LORA = "lora-model";
  private static TestRouter router;

  @BeforeAll
  static void start() {
    router = TestRouter.start();
    join(router.workers.register(worker(PD, "p1").setRole(WorkerRole.WORKER_ROLE_PREFILL).build()));
    join(router.workers.register(worker(PD, "p2").setRole(WorkerRole.WORKER_ROLE_PREFILL).build()));
    join(router.workers.register(worker(PD, "d1").setRole(WorkerRole.WORKER_ROLE_DECODE).build()));
    join(router.workers.register(worker(PD, "d2").setRole(WorkerRole.WORKER_ROLE_DECODE).build()));
    join(router.workers.register(worker(DECODE_ONLY, "d1").setRole(WorkerRole.WORKER_ROLE_DECODE).build()));
    join(router.workers.register(worker(LORA, "a").build()));
    join(router.workers.register(worker(LORA, "b").addLoraAdapters("sql").build()));
    join(router.workers.register(worker(LORA, "c").addLoraAdapters("sql").addLoraAdapters("chat").build()));
    join(router.workers.register(worker(LORA, "d").build()));
  }

  @AfterAll
  static void stop() {
    router.close();
  }

  private static RouteRequest.Builder request(String model, String id) {
    return RouteRequest.newBuilder().setModel(model).setRequestId(id).setIslTokens(100);
  }

  private static RankState rank(ModelState state, String workerId) {
    for (WorkerState w : state.getWorkersList()) {
      if (w.getConfig().getWorkerId().equals(workerId)) {
        return w.getRanks(0);
      }
    }
    throw new AssertionError("no worker " + workerId);
  }

  private static void rejects(String model, Supplier<CompletionStage<?>> call, Status.Code code, String expected) {
    ModelState before = router.state(model).toBuilder().clearStaleness().clearPools().build();
    StatusRuntimeException e = failure(call.get());
    assertThat(e.getStatus().getCode()).as(e.toString()).isEqualTo(code);
    assertThat(reason(e)).as(e.toString()).isEqualTo(expected);
    assertThat(e.getStatus().getDescription()).isNotBlank();
    assertThat(router.state(model).toBuilder().clearStaleness().clearPools().build()).as("state unchanged")
        .isEqualTo(before);
  }

  @Test
  void aBookAnswersAPairThatOneReferenceReleases() {
    Booking booking = join(router.router.book(request(PD, "pair-1").build()));
    Selection selection = booking.getSelection();
    assertThat(selection.getWorker().getWorkerId()).startsWith("p");
    assertThat(selection.hasDecode()).isTrue();
    assertThat(selection.getDecode().getWorker().getWorkerId()).startsWith("d");
    assertThat(selection.getDecode().getWorker().getEndpoint()).startsWith("http://d");
    assertThat(selection.getDecode().getLoad().getDecodeBlocks()).isEqualTo(7);
    String prefill = selection.getWorker().getWorkerId();
    String decode = selection.getDecode().getWorker().getWorkerId();

    ModelState state = router.state(PD);
    BookingState booked = state.getBookingsList().stream().filter(b -> b.getRequestId().equals("pair-1"))
        .findFirst().orElseThrow();
    assertThat(booked.getWorkerId()).isEqualTo(prefill);
    assertThat(booked.getDecodeWorkerId()).isEqualTo(decode);
    assertThat(rank(state, prefill).getLoad().getPrefillTokens()).isEqualTo(100);
    assertThat(rank(state, decode).getLoad().getDecodeBlocks()).isEqualTo(7);

    BookingRef ref = BookingRef.newBuilder().setModel(PD).setRequestId("pair-1").setAttempt(booking.getAttempt())
        .build();
    assertThat(join(router.router.markPrefillDone(ref)).getApplied()).isTrue();
    assertThat(rank(router.state(PD), prefill).getLoad().getInFlight()).as("prefill rank freed").isZero();
    assertThat(rank(router.state(PD), decode).getLoad().getInFlight()).isEqualTo(1);
    assertThat(join(router.router.renew(ref)).getApplied()).isTrue();
    assertThat(join(router.router.release(ref)).getApplied()).isTrue();
    ModelState after = router.state(PD);
    assertThat(rank(after, decode).getLoad().getInFlight()).isZero();
    assertThat(rank(after, decode).getLoad().getDecodeBlocks()).isZero();
    assertThat(after.getBookingsList()).extracting(BookingState::getRequestId).doesNotContain("pair-1");
  }

  @Test
  void theStateRouteShowsAPairsDecodeRankAndTheWorkersRolesAndAdapters() throws Exception {
    Booking booking = join(router.router.book(request(PD, "pair-route").build()));
    try {
      var pd = router.managementGet("/models/state?model=" + PD);
      assertThat(pd.statusCode()).isEqualTo(200);
      assertThat(pd.body()).contains("\"decodeWorkerId\": \""
          + booking.getSelection().getDecode().getWorker().getWorkerId() + "\"")
          .contains("\"role\": \"WORKER_ROLE_PREFILL\"").contains("\"role\": \"WORKER_ROLE_DECODE\"");
      var lora = router.managementGet("/models/state?model=" + LORA);
      assertThat(lora.body()).containsPattern("\"loraAdapters\": \\[\\s*\"chat\",\\s*\"sql\"\\s*\\]");
    } finally {
      join(router.router.release(BookingRef.newBuilder().setModel(PD).setRequestId("pair-route")
          .setAttempt(booking.getAttempt()).build()));
    }
  }

  @Test
  void anExplainedSelectShowsBothHalves() {
    Selection selection = join(router.router.select(RouteRequest.newBuilder().setModel(PD).setIslTokens(100)
        .setExplain(true).build()));
    assertThat(selection.hasDecode()).isTrue();
    assertThat(selection.getExplanation().getPicked().getWorkerId()).isEqualTo(selection.getWorker().getWorkerId());
    assertThat(selection.getDecodeExplanation().getPicked().getWorkerId())
        .isEqualTo(selection.getDecode().getWorker().getWorkerId());
    assertThat(selection.getDecodeExplanation().getFilteredList()).extracting(f -> f.getReason())
        .containsOnly("ROLE");
  }

  @Test
  void aConditionalThresholdBooksTheDecodeRankAloneForAShortPrompt() {
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(PD)
        .putParameters("conditional_disagg_isl_threshold", "128").build()));
    try {
      Booking shortPrompt = join(router.router.book(request(PD, "short").build()));
      assertThat(shortPrompt.getSelection().hasDecode()).isFalse();
      assertThat(shortPrompt.getSelection().getWorker().getWorkerId()).startsWith("d");
      Booking longPrompt = join(router.router.book(request(PD, "long").setIslTokens(400).build()));
      assertThat(longPrompt.getSelection().hasDecode()).isTrue();
      for (Booking b : new Booking[] {shortPrompt, longPrompt}) {
        join(router.router.release(BookingRef.newBuilder().setModel(PD).setRequestId(b.getRequestId())
            .setAttempt(b.getAttempt()).build()));
      }
    } finally {
      join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(PD)
          .putParameters("conditional_disagg_isl_threshold", "").build()));
    }
  }

  @Test
  void prefillLoadBooksTheDecodeRankAloneOnceThePrefillRankIsBusy() {
    String model = "pd-prefill-load";
    join(router.workers.register(worker(model, "p1").setRole(WorkerRole.WORKER_ROLE_PREFILL).build()));
    join(router.workers.register(worker(model, "d1").setRole(WorkerRole.WORKER_ROLE_DECODE).build()));
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(model)
        .putParameters("conditional_disagg_policy", "prefill_load")
        .putParameters("conditional_disagg_prefill_busy_threshold", "0.5").build()));
    assertThat(join(router.router.select(request(model, "").build())).hasDecode()).as("p1 idle").isTrue();
    // 4097 prefill tokens on p1: above 0.5 of its 8192 batched tokens
    join(router.router.book(request(model, "fill").setIslTokens(4097)
        .setDisaggregation(Disaggregation.DISAGGREGATION_DISAGGREGATED).build()));
    Booking bypassed = join(router.router.book(request(model, "bypassed").build()));
    assertThat(bypassed.getSelection().hasDecode()).isFalse();
    assertThat(bypassed.getSelection().getWorker().getWorkerId()).isEqualTo("d1");
    assertThat(rank(router.state(model), "d1").getLoad().getPrefillTokens()).isEqualTo(100);
  }

  @Test
  void badConditionalRulesAreRefusedAndNothingChanges() {
    for (String[] bad : new String[][] {{"conditional_disagg_policy", "greedy"},
        {"conditional_disagg_policy", "prefill_load"}, // neither its threshold nor queue_threshold_frac is set
        {"conditional_disagg_prefill_busy_threshold", "-1"}, {"conditional_disagg_decode_busy_threshold", "x"}}) {
      rejects(PD, () -> router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(PD)
          .putParameters(bad[0], bad[1]).build()), Status.Code.INVALID_ARGUMENT, "INVALID_POLICY_PARAMETER");
    }
  }

  @Test
  void aDecodeOnlyModelAskedForAggregationIsRefusedAndNothingChanges() {
    rejects(DECODE_ONLY, () -> router.router.book(request(DECODE_ONLY, "agg")
        .setDisaggregation(Disaggregation.DISAGGREGATION_AGGREGATED).build()),
        Status.Code.FAILED_PRECONDITION, "NO_AGGREGATED_WORKERS");
    rejects(DECODE_ONLY, () -> router.router.book(request(DECODE_ONLY, "pair")
        .setDisaggregation(Disaggregation.DISAGGREGATION_DISAGGREGATED).build()),
        Status.Code.FAILED_PRECONDITION, "NO_PREFILL_WORKERS");
    rejects(DECODE_ONLY, () -> router.router.select(request(DECODE_ONLY, "")
        .setDisaggregation(Disaggregation.DISAGGREGATION_AGGREGATED).build()),
        Status.Code.FAILED_PRECONDITION, "NO_AGGREGATED_WORKERS");
  }

  @Test
  void undefinedEnumValuesAndBadAdapterListsAreRefusedAndNothingChanges() {
    rejects(PD, () -> router.router.book(request(PD, "mode-9").setDisaggregationValue(9).build()),
        Status.Code.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE");
    rejects(PD, () -> router.workers.register(worker(PD, "x").setRoleValue(7).build()),
        Status.Code.INVALID_ARGUMENT, "UNKNOWN_ENUM_VALUE");
    rejects(LORA, () -> router.workers.register(worker(LORA, "x").addLoraAdapters("").build()),
        Status.Code.INVALID_ARGUMENT, "MALFORMED");
    rejects(LORA, () -> router.workers.register(worker(LORA, "x").addLoraAdapters("n".repeat(257)).build()),
        Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
    rejects(LORA, () -> router.workers.register(worker(LORA, "x").addAllLoraAdapters(
        IntStream.range(0, 1025).mapToObj(i -> "a" + i).toList()).build()),
        Status.Code.INVALID_ARGUMENT, "TOO_MANY_ITEMS");
    rejects(PD, () -> router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(PD)
        .putParameters("conditional_disagg_ratio_threshold", "2").build()),
        Status.Code.INVALID_ARGUMENT, "INVALID_POLICY_PARAMETER");
  }

  @Test
  void anAdapterAReportNamesIsPreferredAndShownInTheState() {
    String model = "lora-reported";
    join(router.workers.register(worker(model, "x").build()));
    join(router.workers.register(worker(model, "y").build()));
    join(router.workers.reportLoad(io.kvrouter.api.v1.LoadReport.newBuilder().setModel(model).setWorkerId("y")
        .addRanks(io.kvrouter.api.v1.RankLoadReport.newBuilder().setDpRank(0).addLoraAdapters("fresh")).build()));
    for (int i = 0; i < 10; i++) {
      assertThat(join(router.router.select(RouteRequest.newBuilder().setModel(model).setIslTokens(64)
          .setLoraName("fresh").build())).getWorker().getWorkerId()).isEqualTo("y");
    }
    assertThat(rank(router.state(model), "y").getReported().getLoraAdaptersList()).containsExactly("fresh");
    rejects(model, () -> router.workers.reportLoad(io.kvrouter.api.v1.LoadReport.newBuilder().setModel(model)
        .setWorkerId("y").addRanks(io.kvrouter.api.v1.RankLoadReport.newBuilder().setDpRank(0)
            .addLoraAdapters("")).build()), Status.Code.INVALID_ARGUMENT, "MALFORMED");
  }

  @Test
  void loraRequestsGoToWorkersWithTheAdapterAndTheStateShowsAdapters() {
    Set<String> chosen = new HashSet<>();
    for (int i = 0; i < 20; i++) {
      chosen.add(join(router.router.select(RouteRequest.newBuilder().setModel(LORA).setIslTokens(64)
          .setLoraName("sql").build())).getWorker().getWorkerId());
    }
    assertThat(chosen).isSubsetOf("b", "c");
    Set<String> cold = new HashSet<>();
    for (int i = 0; i < 20; i++) {
      cold.add(join(router.router.select(RouteRequest.newBuilder().setModel(LORA).setIslTokens(64)
          .setLoraName("never-loaded").build())).getWorker().getWorkerId());
    }
    assertThat(cold).as("a cold adapter goes to one worker").hasSize(1);
    ModelState state = router.state(LORA);
    assertThat(state.getWorkersList()).filteredOn(w -> w.getConfig().getWorkerId().equals("c")).singleElement()
        .satisfies(w -> assertThat(w.getConfig().getLoraAdaptersList()).containsExactly("chat", "sql"));
  }
}
