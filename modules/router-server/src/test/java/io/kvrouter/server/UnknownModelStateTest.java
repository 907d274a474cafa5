package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.reason;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.cluster.admission.ModelAdmission;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.TreeSet;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.sharding.ShardRegion.CurrentShardRegionState;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every call that names a model nobody registered answers as for an unknown model, over gRPC and the management
 * route, and leaves no view, KV index or admission entity behind.
 */
class UnknownModelStateTest {
  private static TestRouter router;

  @BeforeAll
  static void start() {
    router = TestRouter.start();
  }

  @AfterAll
  static void stop() {
    router.close();
  }

  @Test
  void callsOnUnknownNamesAnswerUnknownAndKeepNothing() throws Exception {
    join(router.workers.register(TestRouter.worker("real", "w1").build()));
    for (int i = 0; i < 50; i++) {
      String model = "nobody-" + i + "-" + "x".repeat(200);
      RouteRequest request = RouteRequest.newBuilder().setModel(model).setRequestId("r" + i).addTokenIds(1).build();
      BookingRef ref = BookingRef.newBuilder().setModel(model).setRequestId("r" + i).setAttempt(1).build();
      var select = failure(router.router.select(request));
      assertThat(select.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
      assertThat(reason(select)).isEqualTo("UNKNOWN_MODEL");
      assertThat(reason(failure(router.router.book(request)))).isEqualTo("UNKNOWN_MODEL");
      assertThat(reason(failure(router.admin.getModelState(ModelStateRequest.newBuilder().setModel(model).build()))))
          .isEqualTo("UNKNOWN_MODEL");
      assertThat(join(router.router.release(ref)).getApplied()).isFalse();
      assertThat(join(router.router.markPrefillDone(ref)).getApplied()).isFalse();
      assertThat(join(router.router.renew(ref)).getApplied()).isFalse();
      var deregister = failure(router.workers.deregister(WorkerKey.newBuilder().setModel(model).setWorkerId("w")
          .build()));
      assertThat(deregister.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
      HttpResponse<String> route = router.managementGet(
          "/models/state?model=" + URLEncoder.encode(model, StandardCharsets.UTF_8));
      assertThat(route.statusCode()).isEqualTo(404);
      assertThat(router.node.cluster().slot(model)).as("no slot: no view, KV index or decision log").isNull();
      assertThat(router.node.cluster().modelsHeld()).doesNotContain(model);
    }
    assertThat(entities()).containsExactly("real");
    // a known model keeps its one slot (its facades are made per call from it)
    assertThat(router.node.cluster().slot("real")).isNotNull().isSameAs(router.node.cluster().slot("real"));
  }

  private static Set<String> entities() {
    TestProbe<CurrentShardRegionState> probe = TestProbe.create(router.node.system());
    ClusterSharding.get(router.node.system()).shardState()
        .tell(new GetShardRegionState(ModelAdmission.ENTITY_KEY, probe.getRef()));
    Set<String> ids = new TreeSet<>();
    probe.receiveMessage().getShards().forEach(shard -> ids.addAll(shard.getEntityIds()));
    return ids;
  }
}
