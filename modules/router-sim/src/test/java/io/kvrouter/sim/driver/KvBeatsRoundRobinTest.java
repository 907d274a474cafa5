package io.kvrouter.sim.driver;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.sim.workload.SessionWorkload;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A short seeded multi-turn run through a real router on virtual time: kv, fed by the engines' events, serves more
 * prompt tokens from the cache than round_robin. The figures themselves are the benchmark's business.
 */
class KvBeatsRoundRobinTest {
  @Test
  void kvGetsAStrictlyHigherHitRateThanRoundRobinOnSharedPrefixes() {
    // 12 sessions of 3-4 turns: a 256-token shared prefix, 100-300 new tokens a turn, 1 s think
    SessionWorkload.Params workload = new SessionWorkload.Params("test", 12, 2, 256, 3, 4, 100, 300, 20, 60, 4.0,
        1.0, 11);
    Comparison.Setup setup = new Comparison.Setup("test", FleetConfig.of(4, 1, 4_000, 16),
        () -> new SessionWorkload(workload), 11, Map.of());
    List<Comparison.Contender> contenders = List.of(
        new Comparison.Contender("round_robin", "round_robin", true),
        new Comparison.Contender("kv", "kv", true));
    Pacer.Virtual clock = new Pacer.Virtual();
    List<RunResult> results;
    try (InProcessRouter router = InProcessRouter.start(clock)) {
      results = Comparison.run(setup, contenders, router.clients(), clock, "", (label, done, arrived, now) -> {});
    }
    RunResult roundRobin = results.get(0);
    RunResult kv = results.get(1);
    assertThat(roundRobin.completed()).isEqualTo(kv.completed()).isPositive();
    assertThat(roundRobin.rejected() + kv.rejected()).isZero();
    assertThat(kv.hitRate()).isGreaterThan(roundRobin.hitRate());
    assertThat(kv.hitRate()).isLessThanOrEqualTo(kv.idealHitRate());
  }
}
