package io.kvrouter.epp;

import io.kvrouter.front.routing.RequestBooking;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * The endpoint picker's series in the node's registry (root README, "Metrics and logs"). {@code model} is a model
 * with registered workers on this node or empty; {@code status} the HTTP status the request got (the picker's own
 * answer, or the model server's as Envoy relayed it); {@code kind} prompt, completion or cached.
 */
public final class EppMetrics implements RequestBooking.Events {
  private static final Duration[] PICK_BUCKETS = micros(10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000,
      25_000, 100_000, 1_000_000, 5_000_000);

  private final MeterRegistry registry;
  private final Predicate<String> knownModel;
  private final AtomicInteger active = new AtomicInteger();
  private final Map<String, Timer> pick = new ConcurrentHashMap<>();
  private final Counter releasesFailed;

  public EppMetrics(MeterRegistry registry, Predicate<String> knownModel) {
    this.registry = registry;
    this.knownModel = knownModel;
    Gauge.builder("kvrouter.epp.streams.active", active, AtomicInteger::get)
        .description("ext_proc streams (one per HTTP request) the picker is serving now").register(registry);
    releasesFailed = Counter.builder("kvrouter.epp.releases.failed")
        .description("Releases the picker sent that got no answer (the lease reclaims the booking)")
        .register(registry);
  }

  private String model(String model) {
    return model != null && knownModel.test(model) ? model : "";
  }

  void opened() {
    active.incrementAndGet();
  }

  void closed() {
    active.decrementAndGet();
  }

  /** A request ended with {@code status} (0: the stream ended before any status). */
  void finished(String model, int status, String outcome) {
    Counter.builder("kvrouter.epp.requests")
        .description("Requests the picker saw to their end, by model, HTTP status and outcome")
        .tags(Tags.of("model", model(model), "status", Integer.toString(status), "outcome", outcome))
        .register(registry).increment();
  }

  /** From the end of the request body to the picker's answer: parsing, tokenizing, booking. */
  void picked(String model, long nanos) {
    String label = model(model);
    Timer timer = pick.get(label);
    if (timer == null) {
      timer = pick.computeIfAbsent(label, m -> Timer.builder("kvrouter.epp.pick")
          .description("Time from the end of a request's body to the picker's answer: parsing, tokenizing, booking")
          .tags(Tags.of("model", m)).serviceLevelObjectives(PICK_BUCKETS).register(registry));
    }
    timer.record(nanos, TimeUnit.NANOSECONDS);
  }

  /** The engine's reported usage of a finished response. */
  void usage(String model, UsageScanner.Usage usage) {
    count(model, "prompt", usage.promptTokens());
    count(model, "completion", usage.completionTokens());
    count(model, "cached", usage.cachedTokens());
  }

  private void count(String model, String kind, long tokens) {
    if (tokens > 0) {
      Counter.builder("kvrouter.epp.tokens")
          .description("Tokens the engines reported in the responses the picker relayed (usage), by kind")
          .tags(Tags.of("model", model(model), "kind", kind)).register(registry).increment(tokens);
    }
  }

  /** The data plane reported a served endpoint other than the booked one: the booking was released. */
  void servedElsewhere(String model) {
    Counter.builder("kvrouter.epp.served.elsewhere")
        .description("Requests the gateway served on another endpoint than the booked one (booking released)")
        .tags(Tags.of("model", model(model))).register(registry).increment();
  }

  @Override
  public void released(boolean applied) {}

  @Override
  public void releaseFailed(Throwable failure) {
    releasesFailed.increment();
  }

  private static Duration[] micros(long... values) {
    Duration[] out = new Duration[values.length];
    for (int i = 0; i < values.length; i++) {
      out[i] = Duration.ofNanos(values[i] * 1_000);
    }
    return out;
  }
}
