package io.kvrouter.sim.driver;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.sim.workload.SessionWorkload;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * One seeded virtual-time run of kv, twice, each through a fresh router: the same requests land on the same engines
 * and every figure repeats. The fleet is mostly idle, so kv's picks are full of ties that only its seeded draws
 * break: a draw that depended on which dispatcher thread ran the admission actor would change the placements.
 */
class RepeatableRunTest {
  @Test
  void twoRunsOfOneSeededWorkloadPlaceEveryRequestAlikeAndRepeatEveryFigure() {
    RunResult first = runOnce();
    RunResult second = runOnce();
    assertThat(first.completed()).isPositive();
    assertThat(second.served()).isEqualTo(first.served());
    assertThat(second.servedPerUnit()).isEqualTo(first.servedPerUnit());
    assertThat(second.busyMicrosPerUnit()).isEqualTo(first.busyMicrosPerUnit());
    assertThat(second.cachedTokens()).isEqualTo(first.cachedTokens());
    assertThat(second.ttftMicros()).isEqualTo(first.ttftMicros());
  }

  private static RunResult runOnce() {
    // 80 sessions of 3-4 turns over 8 engines: most Books find several idle ranks of equal cost
    SessionWorkload.Params workload = new SessionWorkload.Params("repeat", 80, 4, 128, 3, 4, 50, 150, 10, 30, 4.0,
        1.0, 7);
    Comparison.Setup setup = new Comparison.Setup("repeat", FleetConfig.of(8, 1, 4_000, 16),
        () -> new SessionWorkload(workload), 7, Map.of());
    Pacer.Virtual clock = new Pacer.Virtual();
    try (InProcessRouter router = InProcessRouter.start(clock)) {
      return Comparison.run(setup, List.of(new Comparison.Contender("kv", "kv", true)), router.clients(), clock, "",
          (label, done, arrived, now) -> {}).get(0);
    }
  }
}
