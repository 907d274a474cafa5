package io.kvrouter.front.metrics;

import io.kvrouter.front.routing.CircuitBreakers;
import io.kvrouter.front.routing.RequestBooking;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiPredicate;
import java.util.function.Predicate;

/**
 * The front's series in the node's registry (scraped at the management server's /metrics). {@code model} is a
 * model with registered workers on this node or empty (a request for an unknown model adds no model series);
 * {@code endpoint} one of the front's paths, {@code status} an HTTP status, {@code reason} one of the front's failure
 * reasons, {@code worker} (and a pair's {@code prefill_worker}, {@code decode_worker}) a registered worker: the series
 * of workers that left are dropped ({@link #breakerListener}'s {@code forgotten}, {@link #prunePairs}).
 */
public final class FrontMetrics implements RequestBooking.Events {
  private static final Duration[] TTFT_BUCKETS = millis(1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000,
      10_000, 30_000, 60_000);
  private static final Duration[] INTER_TOKEN_BUCKETS = micros(100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000,
      50_000, 100_000, 250_000, 1_000_000, 10_000_000);
  private static final Duration[] OVERHEAD_BUCKETS = micros(10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000,
      25_000, 100_000, 1_000_000);

  private final MeterRegistry registry;
  private final Predicate<String> knownModel;
  private final AtomicInteger active = new AtomicInteger();
  private final Map<String, Timer> ttft = new ConcurrentHashMap<>();
  private final Map<String, Timer> interToken = new ConcurrentHashMap<>();
  private final Map<String, Timer> routing = new ConcurrentHashMap<>();
  private final Map<String, Timer> prefill = new ConcurrentHashMap<>();
  private final Map<Pair, Counter> pairs = new ConcurrentHashMap<>();
  /** Per-request meters by their tags, so a request looks its meter up instead of building and registering it. */
  private final Map<String, Counter> requests = new ConcurrentHashMap<>();
  private final Map<String, Counter> retries = new ConcurrentHashMap<>();
  private final Map<String, DistributionSummary> tokenize = new ConcurrentHashMap<>();
  private final Map<String, Gauge> breakerGauges = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> breakerStates = new ConcurrentHashMap<>();
  private final Map<String, Counter> breakerTrips = new ConcurrentHashMap<>();
  private final Counter releasesFailed;

  public FrontMetrics(MeterRegistry registry, Predicate<String> knownModel) {
    this.registry = registry;
    this.knownModel = knownModel;
    Gauge.builder("kvrouter.front.requests.active", active, AtomicInteger::get)
        .description("Requests the front is serving now").register(registry);
    releasesFailed = Counter.builder("kvrouter.front.releases.failed")
        .description("Releases the front sent that got no answer (the lease reclaims the booking)").register(registry);
  }

  private String model(String model) {
    return model != null && knownModel.test(model) ? model : "";
  }

  public void started() {
    active.incrementAndGet();
  }

  /** A request answered with {@code status} (after its stream ended, for a stream). */
  public void finished(String model, String endpoint, int status) {
    active.decrementAndGet();
    answered(model, endpoint, status);
  }

  /** A request refused before it started (its headers alone decided it). */
  public void refused(String endpoint, int status) {
    answered(null, endpoint, status);
  }

  private void answered(String model, String endpoint, int status) {
    String label = model(model);
    String key = label + '\0' + endpoint + '\0' + status;
    Counter counter = requests.get(key);
    if (counter == null) {
      counter = requests.computeIfAbsent(key, k -> Counter.builder("kvrouter.front.requests")
          .description("Requests the front answered, by model, endpoint, status")
          .tags(Tags.of("model", label, "endpoint", endpoint, "status", Integer.toString(status)))
          .register(registry));
    }
    counter.increment();
  }

  /** Request arrival to the first byte of the engine's answer, as the front sees it. */
  public void timeToFirstToken(String model, long nanos) {
    timer(ttft, "kvrouter.front.ttft", "Time from a request's arrival to the first byte (token) of its answer",
        model, TTFT_BUCKETS).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Between two chunks of a streamed answer. */
  public void interToken(String model, long nanos) {
    timer(interToken, "kvrouter.front.inter.token", "Time between two chunks of a streamed answer", model,
        INTER_TOKEN_BUCKETS).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** What the front adds before forwarding: parsing, tokenizing and booking (one per forwarded attempt). */
  public void routing(String model, long nanos) {
    timer(routing, "kvrouter.front.routing", "Time from a request's arrival (or its previous attempt's failure) to "
        + "its forwarding: parsing, tokenizing, booking", model, OVERHEAD_BUCKETS).record(nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * A prefill/decode pair's prefill engine answered: counted per (model, prefill worker, decode worker), and the
   * time from the prefill request's send to its whole answer per model.
   */
  public void prefilled(String model, String prefillWorker, String decodeWorker, long nanos) {
    String label = model(model);
    Pair key = new Pair(model, prefillWorker, decodeWorker);
    Counter counter = pairs.get(key);
    if (counter == null) {
      counter = pairs.computeIfAbsent(key, k -> Counter.builder("kvrouter.front.disaggregated")
          .description("Requests served by a prefill/decode pair (vLLM's two-step protocol), by model, prefill "
              + "worker and decode worker")
          .tags(Tags.of("model", label, "prefill_worker", prefillWorker, "decode_worker", decodeWorker))
          .register(registry));
    }
    counter.increment();
    timer(prefill, "kvrouter.front.prefill", "Time from a pair's prefill request to the prefill engine's whole answer",
        model, TTFT_BUCKETS).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** A pair series' key: the model as booked (not its label), so a pair is matched against that model's workers. */
  private record Pair(String model, String prefillWorker, String decodeWorker) {}

  /**
   * Drops the pair series ({@code kvrouter.front.disaggregated}) whose prefill or decode worker is no longer
   * registered ({@code registered(model, worker)} false): a worker that left takes its series with it, as its
   * breaker's do. The front calls it periodically.
   */
  public void prunePairs(BiPredicate<String, String> registered) {
    for (Map.Entry<Pair, Counter> entry : pairs.entrySet()) {
      Pair pair = entry.getKey();
      if (!registered.test(pair.model(), pair.prefillWorker()) || !registered.test(pair.model(),
          pair.decodeWorker())) {
        if (pairs.remove(pair, entry.getValue())) {
          registry.remove(entry.getValue());
        }
      }
    }
  }

  /** A worker that failed before the first byte: the request is retried (or given up when no attempt is left). */
  public void retried(String model, String reason) {
    String label = model(model);
    retries.computeIfAbsent(label + '\0' + reason, k -> Counter.builder("kvrouter.front.retries")
        .description("Attempts that failed before the first byte and were booked again elsewhere, by reason")
        .tags(Tags.of("model", label, "reason", reason)).register(registry)).increment();
  }

  public void tokenized(String model, boolean approximate, long nanos) {
    String label = model(model);
    String mode = approximate ? "approximate" : "tokens";
    String key = label + '\0' + mode;
    DistributionSummary summary = tokenize.get(key);
    if (summary == null) {
      summary = tokenize.computeIfAbsent(key, k -> DistributionSummary.builder("kvrouter.front.prompt.tokenize.micros")
          .description("Time to tokenize (or hash approximately) a prompt, microseconds")
          .tags(Tags.of("model", label, "mode", mode))
          .serviceLevelObjectives(10, 50, 100, 500, 1_000, 2_000, 5_000, 10_000, 50_000)
          .register(registry));
    }
    summary.record(nanos / 1_000.0);
  }

  /**
   * The breaker listener: a state gauge (0 closed, 1 open, 2 half-open) and a trip counter per worker; a forgotten
   * breaker's gauge is dropped.
   */
  public CircuitBreakers.Listener breakerListener() {
    return new CircuitBreakers.Listener() {
      @Override
      public void changed(String model, String worker, CircuitBreakers.State from, CircuitBreakers.State to) {
        String key = model + '\0' + worker;
        AtomicInteger state = breakerStates.computeIfAbsent(key, k -> new AtomicInteger());
        state.set(switch (to) {
          case CLOSED -> 0;
          case OPEN -> 1;
          case HALF_OPEN -> 2;
        });
        Tags tags = Tags.of("model", model(model), "worker", worker);
        breakerGauges.computeIfAbsent(key, k -> Gauge.builder("kvrouter.front.breaker.state", state,
                AtomicInteger::get).description("This node's circuit breaker per worker: 0 closed, 1 open, 2 half-open")
            .tags(tags).register(registry));
        if (to == CircuitBreakers.State.OPEN) {
          breakerTrips.computeIfAbsent(key, k -> Counter.builder("kvrouter.front.breaker.trips")
              .description("Times a worker's breaker opened on this node").tags(tags).register(registry)).increment();
        }
      }

      @Override
      public void forgotten(String model, String worker) {
        String key = model + '\0' + worker;
        Gauge gauge = breakerGauges.remove(key);
        breakerStates.remove(key);
        if (gauge != null) {
          registry.remove(gauge);
        }
        Counter trips = breakerTrips.remove(key);
        if (trips != null) {
          registry.remove(trips);
        }
      }
    };
  }

  @Override
  public void released(boolean applied) {}

  @Override
  public void releaseFailed(Throwable failure) {
    releasesFailed.increment();
  }

  private Timer timer(Map<String, Timer> timers, String name, String description, String model,
      Duration[] buckets) {
    String label = model(model);
    Timer timer = timers.get(label);
    if (timer == null) {
      timer = timers.computeIfAbsent(label, m -> Timer.builder(name).description(description)
          .tags(Tags.of("model", m)).serviceLevelObjectives(buckets).register(registry));
    }
    return timer;
  }

  private static Duration[] millis(long... values) {
    Duration[] out = new Duration[values.length];
    for (int i = 0; i < values.length; i++) {
      out[i] = Duration.ofMillis(values[i]);
    }
    return out;
  }

  private static Duration[] micros(long... values) {
    Duration[] out = new Duration[values.length];
    for (int i = 0; i < values.length; i++) {
      out[i] = Duration.ofNanos(values[i] * 1_000);
    }
    return out;
  }
}
