package io.kvrouter.server;

import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.api.v1.ExplainRequest;
import io.kvrouter.api.v1.RouteRequest;
import org.junit.jupiter.api.Test;

/** With kvrouter.explain.enabled off nothing is recorded; a Select that asks still gets its explanation. */
class ExplainOffTest {
  @Test
  void nothingIsRecordedButTheFlagStillWorks() {
    try (TestRouter router = TestRouter.start("kvrouter.explain.enabled = off")) {
      join(router.workers.register(worker("m", "w1").build()));
      var selection = join(router.router.select(RouteRequest.newBuilder().setModel("m").setIslTokens(16)
          .setExplain(true).build()));
      assertThat(selection.getExplanation().getPicked().getWorkerId()).isEqualTo("w1");
      join(router.router.book(RouteRequest.newBuilder().setModel("m").setRequestId("b").setIslTokens(16).build()));
      assertThat(join(router.admin.explainRecent(ExplainRequest.newBuilder().setModel("m").build()))
          .getDecisionsList()).isEmpty();
    }
  }
}
