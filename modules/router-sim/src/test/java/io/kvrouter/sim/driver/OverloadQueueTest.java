package io.kvrouter.sim.driver;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.sim.workload.OverloadWorkload;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * A short seeded overload (one engine, arrivals at about twice what it serves) through a real router on virtual time,
 * with the router's admission queue: every request is served and none is left waiting; Smith's rule holds (WSPT
 * serves short prompts sooner than FCFS does, on average); and the tenant with three times the quantum gets more
 * first tokens than the other while both are backlogged. The figures themselves are the benchmark's business.
 */
class OverloadQueueTest {
  @Test
  void theQueueServesEveryRequestAndItsOrdersAndSharesHold() {
    FleetConfig fleet = FleetConfig.of(1, 1, 8_000, 16);
    OverloadWorkload.Params workload = new OverloadWorkload.Params(20, 6, 0.3, 0.2, 5);
    List<Overload.Row> all = Overload.rows(10_000);
    List<Overload.Row> rows = List.of(all.get(1), all.get(2), all.get(3)); // FCFS, WSPT, tenants 3:1
    Pacer.Virtual clock = new Pacer.Virtual();
    List<RunResult> results;
    try (InProcessRouter router = InProcessRouter.start(clock)) {
      results = Overload.run(fleet, workload, rows, 5, router.clients(), clock, (label, done, arrived, now) -> {});
    }
    RunResult fcfs = results.get(0);
    RunResult wspt = results.get(1);
    RunResult classes = results.get(2);
    for (RunResult r : results) {
      assertThat(r.rejected()).as(r.label()).isZero();
      assertThat(r.served()).as(r.label()).hasSize((int) r.completed());
    }
    assertThat(fcfs.completed()).isEqualTo(wspt.completed()).isEqualTo(classes.completed()).isGreaterThan(60);
    Predicate<RunResult.Served> shortPrompt = s -> s.promptTokens() <= OverloadWorkload.SHORT_MAX;
    assertThat(meanTtft(wspt, shortPrompt)).isLessThan(meanTtft(fcfs, shortPrompt));
    long window = 6_000_000;
    assertThat(firstTokensWhileArriving(classes, "a", window))
        .isGreaterThan(firstTokensWhileArriving(classes, "b", window));
  }

  private static double meanTtft(RunResult r, Predicate<RunResult.Served> which) {
    return r.served().stream().filter(which).mapToLong(RunResult.Served::ttftMicros).average().orElseThrow();
  }

  private static long firstTokensWhileArriving(RunResult r, String tenant, long window) {
    return r.served().stream().filter(s -> s.policyClass().equals(tenant)
        && s.arrivalMicros() + s.ttftMicros() <= window).count();
  }
}
