package io.kvrouter.front.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CircuitBreakersTest {
  private final AtomicLong clock = new AtomicLong(1_000);
  private final List<String> changes = new ArrayList<>();
  private final CircuitBreakers breakers = new CircuitBreakers(3, Duration.ofSeconds(10), clock::get,
      (model, worker, from, to) -> changes.add(worker + ":" + from + "->" + to));

  @Test
  void opensAfterConsecutiveFailuresOnlyAndASuccessResetsTheCount() {
    breakers.failed("m", "w");
    breakers.failed("m", "w");
    breakers.succeeded("m", "w");
    breakers.failed("m", "w");
    breakers.failed("m", "w");
    assertThat(breakers.excluded("m")).isEmpty();
    assertThat(breakers.failed("m", "w")).isEqualTo(CircuitBreakers.State.OPEN);
    assertThat(breakers.excluded("m")).containsExactly("w");
    assertThat(breakers.excluded("other")).isEmpty();
    assertThat(changes).containsExactly("w:CLOSED->OPEN");
  }

  @Test
  void afterTheCoolDownOneTrialRunsAndItsOutcomeClosesOrReopens() {
    for (int i = 0; i < 3; i++) {
      breakers.failed("m", "w");
    }
    clock.addAndGet(9_999);
    assertThat(breakers.excluded("m")).containsExactly("w");
    clock.addAndGet(1);
    assertThat(breakers.excluded("m")).isEmpty(); // half-open: the next request may try it
    breakers.attempting("m", "w");
    assertThat(breakers.excluded("m")).containsExactly("w"); // its trial is in flight
    assertThat(breakers.failed("m", "w")).isEqualTo(CircuitBreakers.State.OPEN); // one failure reopens it
    clock.addAndGet(10_000);
    assertThat(breakers.excluded("m")).isEmpty();
    breakers.attempting("m", "w");
    breakers.abandoned("m", "w"); // the client left: no verdict, the next request tries
    assertThat(breakers.excluded("m")).isEmpty();
    breakers.attempting("m", "w");
    breakers.succeeded("m", "w");
    assertThat(breakers.snapshot("m")).singleElement().satisfies(b -> {
      assertThat(b.state()).isEqualTo(CircuitBreakers.State.CLOSED);
      assertThat(b.trips()).isEqualTo(2);
      assertThat(b.failures()).isEqualTo(4);
    });
    assertThat(changes).containsExactly("w:CLOSED->OPEN", "w:OPEN->HALF_OPEN", "w:HALF_OPEN->OPEN",
        "w:OPEN->HALF_OPEN", "w:HALF_OPEN->CLOSED");
  }

  @Test
  void breakersOfWorkersThatLeftAreForgotten() {
    breakers.failed("m", "a");
    breakers.failed("m", "b");
    breakers.retain("m", List.of("b"));
    assertThat(breakers.snapshot("m")).extracting(CircuitBreakers.Snapshot::workerId).containsExactly("b");
    breakers.retain("m", List.of());
    assertThat(breakers.models()).isEmpty();
  }
}
