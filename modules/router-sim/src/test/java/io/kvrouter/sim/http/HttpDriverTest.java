package io.kvrouter.sim.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.sim.server.EngineConfig;
import io.kvrouter.sim.server.SimEngineServer;
import io.kvrouter.sim.server.TokenIdsOnlyTokenizer;
import io.kvrouter.sim.workload.SessionWorkload;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The wall-clock driver against two engine servers, round robin over them: every turn completes, conversations
 * carry the engines' own output back, and the hit rate read from the engines' counters is exactly what the engines
 * reported to the clients request by request.
 */
class HttpDriverTest {
  @Test
  void aMultiTurnWorkloadOverHttpCompletesAndTheEnginesCountersAgreeWithWhatClientsWereTold() throws Exception {
    try (SimEngineServer a = SimEngineServer.start(EngineConfig.loopback("org/llama-8b", 2_000, 16, 50),
            new TokenIdsOnlyTokenizer(128_256));
        SimEngineServer b = SimEngineServer.start(EngineConfig.loopback("org/llama-8b", 2_000, 16, 50),
            new TokenIdsOnlyTokenizer(128_256))) {
      // 6 sessions of 2-3 turns over 2 shared 256-token prefixes, 0.5 s simulated think time
      SessionWorkload.Params params = new SessionWorkload.Params("test", 6, 2, 256, 2, 3, 50, 150, 10, 40, 10.0, 0.5,
          3);
      List<URI> bases = List.of(URI.create("http://127.0.0.1:" + a.httpPort()),
          URI.create("http://127.0.0.1:" + b.httpPort()));
      List<URI> metrics = bases.stream().map(u -> u.resolve("/metrics")).toList();
      HttpDriver.Result result = new HttpDriver(new HttpDriver.Settings(null, bases, metrics, "org/llama-8b", 50, 64,
          Duration.ofSeconds(120))).run(new SessionWorkload(params));

      assertThat(result.failed()).isZero();
      assertThat(result.completed()).isBetween(12L, 18L);
      assertThat(result.withoutTokenIds()).isZero();
      assertThat(result.engines().finishedRequests()).isEqualTo(result.completed());
      assertThat(result.engines().prefixQueries()).isEqualTo(result.promptTokensSent());
      assertThat(result.engines().prefixHits()).isEqualTo(result.cachedTokensReported());
      assertThat(result.hitRate()).isPositive();
      assertThat(result.ttftMicros()).hasSize((int) result.completed());
      assertThat(java.util.Arrays.stream(result.ttftMicros()).min().orElse(0)).isPositive();
      assertThat(java.util.Arrays.stream(result.promptTokensPerEngine()).min().orElse(0)).isPositive();
    }
  }
}
