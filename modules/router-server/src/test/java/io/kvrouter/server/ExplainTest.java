package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import io.grpc.Status;
import io.kvrouter.api.v1.CandidateExplanation;
import io.kvrouter.api.v1.ExplainReply;
import io.kvrouter.api.v1.ExplainRequest;
import io.kvrouter.api.v1.Explanation;
import io.kvrouter.api.v1.FilteredRank;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.server.transport.Binding;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** Selects and Books are explained over Admin.ExplainRecent, GET /models/explain and a Select's own answer. */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class ExplainTest {
  private static TestRouter router;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding) {
    router = TestRouter.start(binding);
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    router.close();
  }

  private String model(String name) {
    String model = "org/" + name + "-" + binding.configName();
    join(router.workers.register(worker(model, "w1").build()));
    join(router.workers.register(worker(model, "w2").build()));
    return model;
  }

  private static ExplainReply explain(String model, int limit) {
    return join(router.admin.explainRecent(ExplainRequest.newBuilder().setModel(model).setLimit(limit).build()));
  }

  private static HttpResponse<String> route(String query) throws Exception {
    return router.managementGet("/models/explain?" + query);
  }

  private static String encoded(String model) {
    return URLEncoder.encode(model, StandardCharsets.UTF_8);
  }

  @Test
  void selectsAndBooksAreExplainedNewestFirst() throws Exception {
    String model = model("recent");
    join(router.router.select(RouteRequest.newBuilder().setModel(model).setRequestId("s1").setIslTokens(64).build()));
    join(router.router.book(RouteRequest.newBuilder().setModel(model).setRequestId("b1").setIslTokens(64).build()));
    join(router.router.select(RouteRequest.newBuilder().setModel(model).setRequestId("s2").setIslTokens(64)
        .setPinnedWorker("w2").build()));

    ExplainReply reply = explain(model, 0);
    assertThat(reply.getModel()).isEqualTo(model);
    assertThat(reply.getNode()).isNotEmpty();
    assertThat(reply.getDecisionsList()).extracting(Explanation::getRequestId).containsExactly("s2", "b1", "s1");
    assertThat(reply.getDecisionsList()).extracting(Explanation::getKind).containsExactly("select", "book", "select");
    Explanation pinned = reply.getDecisions(0);
    assertThat(pinned.getPicked().getWorkerId()).isEqualTo("w2");
    assertThat(pinned.getFilteredList()).extracting(FilteredRank::getWorkerId, FilteredRank::getReason)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("w1", "PINNED"));
    Explanation book = reply.getDecisions(1);
    assertThat(book.getPolicy()).isEqualTo("kv");
    assertThat(book.getNode()).isEqualTo(reply.getNode()); // the actor runs on this one node
    assertThat(book.getCandidatesList()).hasSize(2);
    assertThat(book.getHasRunnerUp()).isTrue();
    assertThat(book.getMargin()).isEqualTo(book.getRunnerUpCost() - book.getPickedCost());
    for (CandidateExplanation c : book.getCandidatesList()) {
      // the default preset's terms: its load bound is on
      assertThat(c.getCostTermsMap()).containsOnlyKeys("prefill", "decode", "active", "load_bound");
      assertThat(c.getCostTermsMap().values().stream().mapToDouble(Double::doubleValue).sum())
          .isCloseTo(c.getCost(), org.assertj.core.data.Offset.offset(1e-9));
    }
    assertThat(explain(model, 1).getDecisionsList()).extracting(Explanation::getRequestId).containsExactly("s2");

    HttpResponse<String> route = route("model=" + encoded(model) + "&limit=2");
    assertThat(route.statusCode()).isEqualTo(200);
    ExplainReply.Builder parsed = ExplainReply.newBuilder();
    JsonFormat.parser().merge(route.body(), parsed);
    assertThat(parsed.getDecisionsList()).extracting(Explanation::getRequestId).containsExactly("s2", "b1");
    assertThat(route.body()).contains("\"costTerms\"", "\"hasRunnerUp\"", "\"filtered\"", "\"unixMs\"");
  }

  /** With load_bound_window on, a released booking's rank keeps a recent booking that the explanation shows. */
  @Test
  void aCandidatesRecentBookingsAreExplained() {
    String model = model("recent-bookings");
    join(router.admin.setPolicy(io.kvrouter.api.v1.SetPolicyRequest.newBuilder().setModel(model).setPolicy("kv")
        .putParameters("load_bound_window", "600").build()));
    io.kvrouter.api.v1.Booking booked = join(router.router.book(RouteRequest.newBuilder().setModel(model)
        .setRequestId("r1").setIslTokens(64).setPinnedWorker("w1").build()));
    assertThat(join(router.router.release(io.kvrouter.api.v1.BookingRef.newBuilder().setModel(model)
        .setRequestId("r1").setAttempt(booked.getAttempt()).build())).getApplied()).isTrue();
    Explanation e = join(router.router.select(RouteRequest.newBuilder().setModel(model).setIslTokens(64)
        .setExplain(true).build())).getExplanation();
    assertThat(e.getCandidatesList()).extracting(CandidateExplanation::getWorkerId,
        c -> c.getRecentBookings() > 0.99 && c.getRecentBookings() <= 1, CandidateExplanation::getInFlight)
        .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple("w1", true, 0),
            org.assertj.core.groups.Tuple.tuple("w2", false, 0));
  }

  @Test
  void aSelectCarriesItsExplanationOnlyWhenItAsks() {
    String model = model("flag");
    Selection plain = join(router.router.select(RouteRequest.newBuilder().setModel(model).setIslTokens(32).build()));
    assertThat(plain.hasExplanation()).isFalse();
    Selection explained = join(router.router.select(RouteRequest.newBuilder().setModel(model).setIslTokens(32)
        .addAllowedWorkers("w1").setExplain(true).build()));
    assertThat(explained.hasExplanation()).isTrue();
    Explanation e = explained.getExplanation();
    assertThat(e.getKind()).isEqualTo("select");
    assertThat(e.getPicked().getWorkerId()).isEqualTo(explained.getWorker().getWorkerId()).isEqualTo("w1");
    assertThat(e.getPicked().getEndpoint()).isEqualTo(explained.getWorker().getEndpoint());
    assertThat(e.getPickedCost()).isEqualTo(explained.getCost());
    assertThat(e.getViewVersion()).isEqualTo(explained.getViewVersion());
    assertThat(e.getRequestBlocks()).isEqualTo(2);
    assertThat(e.getFilteredList()).extracting(FilteredRank::getWorkerId, FilteredRank::getReason)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("w2", "NOT_ALLOWED"));
    assertThat(e.getHasRunnerUp()).isFalse();

    Selection excluding = join(router.router.select(RouteRequest.newBuilder().setModel(model).setIslTokens(32)
        .addExcludedWorkers("w1").setExplain(true).build()));
    assertThat(excluding.getWorker().getWorkerId()).isEqualTo("w2");
    assertThat(excluding.getExplanation().getFilteredList()).extracting(FilteredRank::getWorkerId,
        FilteredRank::getReason).containsExactly(org.assertj.core.groups.Tuple.tuple("w1", "EXCLUDED"));
  }

  @Test
  void aDpRankPinnedWithoutAWorkerFiltersEveryWorkersOtherRanksAndAnUnknownOneIsRefused() {
    String model = "org/dp-" + binding.configName();
    join(router.workers.register(worker(model, "w1").setDpSize(2).build()));
    join(router.workers.register(worker(model, "w2").setDpStart(1).setDpSize(2).build()));
    Selection picked = join(router.router.select(RouteRequest.newBuilder().setModel(model).setIslTokens(32)
        .setPinnedDpRank(2).setExplain(true).build()));
    assertThat(picked.getWorker().getWorkerId()).isEqualTo("w2");
    assertThat(picked.getWorker().getDpRank()).isEqualTo(2);
    assertThat(picked.getExplanation().getFilteredList())
        .extracting(FilteredRank::getWorkerId, FilteredRank::getDpRank, FilteredRank::getReason)
        .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple("w1", 0, "PINNED"),
            org.assertj.core.groups.Tuple.tuple("w1", 1, "PINNED"),
            org.assertj.core.groups.Tuple.tuple("w2", 1, "PINNED"));
    for (var call : java.util.List.<java.util.function.Supplier<java.util.concurrent.CompletionStage<?>>>of(
        () -> router.router.select(RouteRequest.newBuilder().setModel(model).setIslTokens(32).setPinnedDpRank(3)
            .build()),
        () -> router.router.book(RouteRequest.newBuilder().setModel(model).setRequestId("dp3").setIslTokens(32)
            .setPinnedDpRank(3).build()))) {
      var refused = failure(call.get());
      assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
      assertThat(reason(refused)).isEqualTo("UNKNOWN_DP_RANK");
    }
  }

  @Test
  void unknownModelsAndBadLimitsAreRejected() throws Exception {
    var unknown = failure(router.admin.explainRecent(ExplainRequest.newBuilder().setModel("nobody").build()));
    assertThat(unknown.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(reason(unknown)).isEqualTo("UNKNOWN_MODEL");
    var empty = failure(router.admin.explainRecent(ExplainRequest.getDefaultInstance()));
    assertThat(empty.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(route("model=nobody").statusCode()).isEqualTo(404);
    assertThat(route("limit=1").statusCode()).isEqualTo(400);
    String model = model("limits");
    assertThat(route("model=" + encoded(model) + "&limit=abc").statusCode()).isEqualTo(400);
    assertThat(route("model=" + encoded(model) + "&limit=-1").body()).contains("INVALID_SIZE");
    assertThat(route("model=" + encoded(model) + "&limit=0").statusCode()).isEqualTo(200);
  }
}
