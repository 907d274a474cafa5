package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.SessionBindingState;
import io.kvrouter.api.v1.SessionMode;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerKey;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Session affinity over real gRPC: a Book's session answer (bound, kept, rebound with the rank it left), the bindings
 * in GetModelState and in the management state route, a removed worker's bindings gone.
 */
class SessionAffinityGrpcTest {
  private static final String MODEL = "sessions";
  private static TestRouter router;

  @BeforeAll
  static void start() {
    router = TestRouter.start(io.kvrouter.server.transport.Binding.values()[0]);
    join(router.workers.register(worker(MODEL, "w1").build()));
    join(router.workers.register(worker(MODEL, "w2").build()));
    join(router.workers.register(worker(MODEL, "w3").build()));
    // round_robin would move every Book on: only the binding keeps a session in place
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("round_robin")
        .putParameters("session_mode", "hard").build()));
  }

  @AfterAll
  static void stop() {
    router.close();
  }

  private static Booking book(String requestId, String session, SessionMode mode, String... excluded) {
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(MODEL).setRequestId(requestId).setIslTokens(64)
        .setSessionId(session).setSessionMode(mode);
    for (String worker : excluded) {
      request.addExcludedWorkers(worker);
    }
    Booking booking = join(router.router.book(request.build()));
    join(router.router.release(BookingRef.newBuilder().setModel(MODEL).setRequestId(requestId)
        .setAttempt(booking.getAttempt()).build()));
    return booking;
  }

  @Test
  void aSessionIsBoundKeptAndReboundOnceItsRankIsExcluded() throws Exception {
    assertThat(book("r0", "", SessionMode.SESSION_MODE_UNSPECIFIED).hasSession())
        .as("a Book naming no session carries no session outcome").isFalse();
    Booking first = book("r1", "conv-1", SessionMode.SESSION_MODE_UNSPECIFIED);
    assertThat(first.hasSession()).isTrue();
    assertThat(first.getSession().getOutcome()).isEqualTo("bound");
    assertThat(first.getSession().getMode()).as("the model's mode").isEqualTo(SessionMode.SESSION_MODE_HARD);
    String bound = first.getSelection().getWorker().getWorkerId();
    for (int i = 0; i < 4; i++) {
      Booking next = book("r-kept-" + i, "conv-1", SessionMode.SESSION_MODE_HARD);
      assertThat(next.getSelection().getWorker().getWorkerId()).isEqualTo(bound);
      assertThat(next.getSession().getOutcome()).isEqualTo("kept");
    }
    Booking moved = book("r-moved", "conv-1", SessionMode.SESSION_MODE_HARD, bound);
    assertThat(moved.getSession().getOutcome()).isEqualTo("rebound");
    assertThat(moved.getSession().getPreviousWorkerId()).isEqualTo(bound);
    assertThat(moved.getSelection().getWorker().getWorkerId()).isNotEqualTo(bound);

    ModelState state = router.state(MODEL);
    assertThat(state.getSessions().getRecentList()).extracting(SessionBindingState::getSessionId,
        SessionBindingState::getWorkerId).contains(org.assertj.core.groups.Tuple.tuple("conv-1",
            moved.getSelection().getWorker().getWorkerId()));
    assertThat(state.getSessions().getRebound()).isGreaterThanOrEqualTo(1);
    assertThat(state.getSessions().getMaxBindings()).isEqualTo(100_000);

    // the management state route renders the same bindings
    String json = router.managementGet("/models/state?model=" + URLEncoder.encode(MODEL, StandardCharsets.UTF_8))
        .body();
    ModelState.Builder parsed = ModelState.newBuilder();
    JsonFormat.parser().ignoringUnknownFields().merge(json, parsed);
    assertThat(parsed.getSessions().getRecentList()).extracting(SessionBindingState::getSessionId)
        .contains("conv-1");
  }

  @Test
  void requiredAndPreferredTaintsOverGrpc() {
    String model = "tainted";
    join(router.workers.register(worker(model, "t1").addTaints("gpu=h100").build()));
    join(router.workers.register(worker(model, "t2").addTaints("gpu=a100").addTaints("spot").build()));
    assertThat(router.state(model).getWorkersList()).filteredOn(w -> w.getConfig().getWorkerId().equals("t2"))
        .singleElement().satisfies(w -> assertThat(w.getConfig().getTaintsList()).containsExactly("gpu=a100", "spot"));
    for (int i = 0; i < 4; i++) {
      RouteRequest request = RouteRequest.newBuilder().setModel(model).setIslTokens(64).addRequiredTaints("spot")
          .build();
      assertThat(join(router.router.select(request)).getWorker().getWorkerId()).isEqualTo("t2");
    }
    // t1 preferred at 0: it costs nothing, so the kv pick goes there while it is eligible
    RouteRequest preferring = RouteRequest.newBuilder().setModel(model).setIslTokens(64)
        .addPreferredTaints("gpu=h100").setPreferredTaintMultiplier(0).build();
    assertThat(join(router.router.select(preferring)).getWorker().getWorkerId()).isEqualTo("t1");
  }

  @Test
  void aRemovedWorkerTakesItsBindingsWithIt() {
    Booking first = book("g1", "conv-gone", SessionMode.SESSION_MODE_HARD);
    String bound = first.getSelection().getWorker().getWorkerId();
    join(router.workers.deregister(WorkerKey.newBuilder().setModel(MODEL).setWorkerId(bound).build()));
    try {
      assertThat(router.state(MODEL).getSessions().getRecentList()).extracting(SessionBindingState::getSessionId)
          .doesNotContain("conv-gone");
      Booking next = book("g2", "conv-gone", SessionMode.SESSION_MODE_HARD);
      assertThat(next.getSession().getOutcome()).isEqualTo("bound");
      assertThat(next.getSelection().getWorker().getWorkerId()).isNotEqualTo(bound);
    } finally {
      join(router.workers.register(worker(MODEL, bound).build()));
    }
  }
}
