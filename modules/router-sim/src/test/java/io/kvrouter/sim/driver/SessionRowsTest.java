package io.kvrouter.sim.driver;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.sim.workload.SessionWorkload;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A short seeded multi-turn run through a real router on virtual time: round_robin moves a conversation's turns over
 * the fleet, round_robin with the turns' session ids (hard affinity) keeps every turn on its session's rank and so
 * serves more prompt tokens from the cache. The figures themselves are the benchmark's business.
 */
class SessionRowsTest {
  @Test
  void hardSessionsKeepEveryTurnOnItsRankUnderRoundRobin() {
    SessionWorkload.Params workload = new SessionWorkload.Params("test", 12, 2, 256, 3, 4, 100, 300, 20, 60, 4.0,
        1.0, 11);
    Comparison.Setup setup = new Comparison.Setup("test", FleetConfig.of(4, 1, 4_000, 16),
        () -> new SessionWorkload(workload), 11, Map.of());
    List<Comparison.Contender> contenders = List.of(
        new Comparison.Contender("round_robin", "round_robin", true),
        Comparison.Contender.withSessions("round_robin", "hard"));
    Pacer.Virtual clock = new Pacer.Virtual();
    List<RunResult> results;
    try (InProcessRouter router = InProcessRouter.start(clock)) {
      results = Comparison.run(setup, contenders, router.clients(), clock, "", (label, done, arrived, now) -> {});
    }
    RunResult plain = results.get(0);
    RunResult sessions = results.get(1);
    assertThat(plain.completed()).isEqualTo(sessions.completed()).isPositive();
    assertThat(sessions.sessionTurns()).isEqualTo(plain.sessionTurns()).isPositive();
    assertThat(sessions.sessionTurnsKept()).isEqualTo(sessions.sessionTurns());
    assertThat(plain.sessionKeptRate()).isLessThan(0.5);
    assertThat(sessions.hitRate()).isGreaterThan(plain.hitRate());
  }
}
