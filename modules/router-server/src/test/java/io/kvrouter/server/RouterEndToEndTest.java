package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthCheckResponse;
import io.kvrouter.api.health.v1.HealthClient;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.core.testkit.TestPolicies;
import io.kvrouter.server.transport.Binding;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.apache.pekko.grpc.GrpcClientSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** Register, select, book, release over real gRPC; the management routes show what those calls produced. */
@ParameterizedClass(name = "{0}")
@EnumSource(Binding.class)
class RouterEndToEndTest {
  private static final String MODEL = "org/name-7b";
  private static TestRouter router;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void start(Binding binding) {
    router = TestRouter.start(binding);
    join(router.workers.register(worker(MODEL, "w1").build()));
    join(router.workers.register(worker(MODEL, "w2").build()));
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    router.close();
  }

  private static HttpResponse<String> get(String path) throws Exception {
    return router.managementGet(path);
  }

  private static ModelState parse(String json) throws Exception {
    ModelState.Builder state = ModelState.newBuilder();
    JsonFormat.parser().merge(json, state);
    return state.build();
  }

  @Test
  void aModelNamedLikeAHuggingFaceIdRegistersSelectsBooksAndShowsUp() throws Exception {
    Selection selection = join(router.router.select(
        RouteRequest.newBuilder().setModel(MODEL).setIslTokens(100).build()));
    assertThat(selection.getWorker().getWorkerId()).isIn("w1", "w2");
    assertThat(selection.getPolicy()).isEqualTo("kv");
    assertThat(selection.getWorker().getEndpoint()).startsWith("http://w");
    assertThat(join(router.admin.listModels(ListModelsRequest.getDefaultInstance())).getModelsList())
        .contains(MODEL);

    Booking booking = join(router.router.book(
        RouteRequest.newBuilder().setModel(MODEL).setRequestId("req-1").setIslTokens(100).build()));
    assertThat(booking.getReplay()).isFalse();
    assertThat(booking.getSelection().getLoad().getInFlight()).isEqualTo(1);
    Booking replay = join(router.router.book(
        RouteRequest.newBuilder().setModel(MODEL).setRequestId("req-1").setIslTokens(100).build()));
    assertThat(replay.getReplay()).isTrue();
    assertThat(replay.getAttempt()).isEqualTo(booking.getAttempt());

    ModelState viaGrpc = router.state(MODEL);
    assertThat(viaGrpc.getBookingsList()).singleElement().satisfies(b -> {
      assertThat(b.getRequestId()).isEqualTo("req-1");
      assertThat(b.getWorkerId()).isEqualTo(booking.getSelection().getWorker().getWorkerId());
      assertThat(b.getPrefillTokens()).isEqualTo(100);
    });
    // one node: it hosts the actor, so its copy is the owner's own (no lag, no age)
    assertThat(viaGrpc.getHostNode()).startsWith("pekko://");
    assertThat(viaGrpc.getRegion()).isNotEmpty();
    assertThat(viaGrpc.getEpoch()).isPositive();
    assertThat(viaGrpc.getRecovering()).isFalse();
    assertThat(viaGrpc.getStaleness().getEpoch()).isEqualTo(viaGrpc.getEpoch());
    assertThat(viaGrpc.getStaleness().getViewVersion()).isEqualTo(viaGrpc.getViewVersion());
    assertThat(viaGrpc.getStaleness().getReplicationSeqLag()).isZero();
    assertThat(viaGrpc.getStaleness().getViewAgeMs()).isZero();

    HttpResponse<String> models = get("/models");
    assertThat(models.statusCode()).isEqualTo(200);
    assertThat(models.body()).contains("\"org/name-7b\"");
    String encoded = URLEncoder.encode(MODEL, StandardCharsets.UTF_8);
    for (String path : new String[] {"/models/state?model=" + encoded, "/models/" + encoded, "/models/" + MODEL}) {
      HttpResponse<String> response = get(path);
      assertThat(response.statusCode()).as(path).isEqualTo(200);
      assertThat(response.headers().firstValue("content-type")).hasValueSatisfying(
          type -> assertThat(type).startsWith("application/json"));
      // the replication seq moves on with every change the owner sends out, and pool summaries age and are
      // republished: compare the rest
      assertThat(parse(response.body()).toBuilder().clearStaleness().clearPools().build()).as(path)
          .isEqualTo(viaGrpc.toBuilder().clearStaleness().clearPools().build());
    }

    assertThat(join(router.router.release(BookingRef.newBuilder().setModel(MODEL).setRequestId("req-1")
        .setAttempt(booking.getAttempt()).build())).getApplied()).isTrue();
    assertThat(parse(get("/models/state?model=" + encoded).body()).getBookingsList()).isEmpty();
  }

  @Test
  void setPolicyShowsUpInTheStateAndChangesThePolicy() throws Exception {
    String model = "policy-model";
    join(router.workers.register(worker(model, "a").build()));
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(model).setPolicy("round_robin")
        .putParameters("seed", "5").build()));
    assertThat(join(router.router.select(RouteRequest.newBuilder().setModel(model).setIslTokens(1).build()))
        .getPolicy()).isEqualTo("round_robin");
    ModelState state = parse(get("/models/state?model=" + model).body());
    assertThat(state.getPolicy()).isEqualTo("round_robin");
    assertThat(state.getPolicyParametersMap()).containsEntry("seed", "5");
  }

  /**
   * A custom policy of router-core's test-jar (registered through META-INF/services) is switched to by name; Selects
   * and Books run it and say so; Dynamo's preset is a parameter like any other; an unknown name changes nothing.
   */
  @Test
  void aPluginPolicyIsSwitchedToByNameAndAnUnknownOneChangesNothing() throws Exception {
    String model = "plugin-model";
    join(router.workers.register(worker(model, "a").build()));
    join(router.workers.register(worker(model, "b").build()));
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(model).setPolicy(TestPolicies.SERIAL)
        .putParameters("seed", "5").putParameters("preset", "dynamo").build()));
    RouteRequest request = RouteRequest.newBuilder().setModel(model).setIslTokens(64).build();
    assertThat(join(router.router.select(request)).getPolicy()).isEqualTo(TestPolicies.SERIAL);
    Booking booking = join(router.router.book(request.toBuilder().setRequestId("plugin-1").build()));
    assertThat(booking.getSelection().getPolicy()).isEqualTo(TestPolicies.SERIAL);
    ModelState state = parse(get("/models/state?model=" + model).body());
    assertThat(state.getPolicy()).isEqualTo(TestPolicies.SERIAL);
    assertThat(state.getPolicyParametersMap()).containsEntry("preset", "dynamo").containsEntry("seed", "5");

    io.grpc.StatusRuntimeException refused = TestRouter.failure(router.admin.setPolicy(SetPolicyRequest.newBuilder()
        .setModel(model).setPolicy("testkit_missing_plugin").build()));
    assertThat(refused.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
    assertThat(TestRouter.reason(refused)).isEqualTo("UNKNOWN_POLICY");
    assertThat(refused.getStatus().getDescription()).contains("testkit_missing_plugin").contains(TestPolicies.SERIAL);
    assertThat(parse(get("/models/state?model=" + model).body()).toBuilder().clearStaleness().clearPools().build())
        .isEqualTo(state.toBuilder().clearStaleness().clearPools().build());
    join(router.router.release(BookingRef.newBuilder().setModel(model).setRequestId("plugin-1")
        .setAttempt(booking.getAttempt()).build()));
  }

  @Test
  void aPlusInAPathIsAPlus() throws Exception {
    join(router.workers.register(worker("a+b", "w1").build()));
    HttpResponse<String> response = get("/models/a+b");
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(parse(response.body()).getModel()).isEqualTo("a+b");
    assertThat(get("/models/a%2Bb").statusCode()).isEqualTo(200);
    assertThat(get("/models/a%20b").statusCode()).as("'a b' is another, unknown, model").isEqualTo(404);
  }

  @Test
  void managementAnswersClearStatusesForBadInput() throws Exception {
    assertThat(get("/models/state?model=unknown-model").statusCode()).isEqualTo(404);
    assertThat(get("/models/state").statusCode()).isEqualTo(400);
    assertThat(get("/models/unknown-model").body()).contains("UNKNOWN_MODEL");
  }

  @Test
  void readinessLivenessAndClusterRoutes() throws Exception {
    assertThat(get("/ready").statusCode()).isEqualTo(200);
    assertThat(get("/alive").statusCode()).isEqualTo(200);
    assertThat(get("/cluster/members").body()).contains("\"Up\"");
    assertThat(get("/cluster/shards/ModelAdmission").statusCode()).isEqualTo(200);
  }

  @Test
  void grpcHealthIsServed() {
    HealthClient health = HealthClient.create(GrpcClientSettings
        .connectToServiceAt("127.0.0.1", router.node.grpcPort(), router.node.system()).withTls(false),
        router.node.system());
    try {
      assertThat(join(health.check(HealthCheckRequest.getDefaultInstance())).getStatus())
          .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
      assertThat(join(health.check(HealthCheckRequest.newBuilder().setService("kvrouter.v1.Router").build()))
          .getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
      assertThat(TestRouter.failure(health.check(HealthCheckRequest.newBuilder().setService("nope").build()))
          .getStatus().getCode()).isEqualTo(io.grpc.Status.Code.NOT_FOUND);
    } finally {
      health.close();
    }
  }
}
