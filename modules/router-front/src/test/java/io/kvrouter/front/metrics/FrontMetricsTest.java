package io.kvrouter.front.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.front.routing.CircuitBreakers;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The front's per-worker series go with their worker: the pair series by {@code prunePairs}, breakers' by forgetting. */
class FrontMetricsTest {
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final FrontMetrics metrics = new FrontMetrics(registry, model -> model.equals("m"));

  private double pairs(String prefill, String decode) {
    var counter = registry.find("kvrouter.front.disaggregated")
        .tags("model", "m", "prefill_worker", prefill, "decode_worker", decode).counter();
    return counter == null ? -1 : counter.count();
  }

  @Test
  void thePairSeriesOfAWorkerThatLeftArePrunedAndTheOthersKept() {
    metrics.prefilled("m", "p1", "d1", 1_000);
    metrics.prefilled("m", "p2", "d1", 1_000);
    metrics.prefilled("m", "p2", "d1", 1_000);
    metrics.prefilled("m", "p2", "d2", 1_000);
    Set<String> live = Set.of("p2", "d1");
    metrics.prunePairs((model, worker) -> model.equals("m") && live.contains(worker));
    assertThat(pairs("p1", "d1")).as("its prefill worker left").isEqualTo(-1);
    assertThat(pairs("p2", "d2")).as("its decode worker left").isEqualTo(-1);
    assertThat(pairs("p2", "d1")).isEqualTo(2);
    assertThat(registry.find("kvrouter.front.disaggregated").counters()).hasSize(1);
    assertThat(registry.find("kvrouter.front.prefill").tags("model", "m").timer().count())
        .as("the per-model prefill timer stays").isEqualTo(4);
    // a worker that comes back starts a new series
    metrics.prefilled("m", "p1", "d1", 1_000);
    assertThat(pairs("p1", "d1")).isEqualTo(1);
  }

  @Test
  void aForgottenBreakerTakesItsStateAndTripSeries() {
    CircuitBreakers.Listener listener = metrics.breakerListener();
    listener.changed("m", "w1", CircuitBreakers.State.CLOSED, CircuitBreakers.State.OPEN);
    listener.changed("m", "w2", CircuitBreakers.State.CLOSED, CircuitBreakers.State.OPEN);
    assertThat(registry.find("kvrouter.front.breaker.trips").counters()).hasSize(2);
    listener.forgotten("m", "w1");
    assertThat(registry.find("kvrouter.front.breaker.state").tags("worker", "w1").gauge()).isNull();
    assertThat(registry.find("kvrouter.front.breaker.trips").tags("worker", "w1").counter()).isNull();
    assertThat(registry.find("kvrouter.front.breaker.trips").tags("worker", "w2").counter().count()).isEqualTo(1);
    assertThat(registry.find("kvrouter.front.breaker.state").tags("worker", "w2").gauge().value()).isEqualTo(1);
  }
}
