package io.kvrouter.server.metrics;

import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.admission.QueueSnapshot;
import io.kvrouter.core.policy.PolicyClass;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.policy.Policy;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.ToDoubleFunction;

/**
 * One registered model's series on this node. Created on the model's first call or scrape while it has registered
 * workers, removed from the registry once the node no longer lists the model ({@link RouterMetrics#scrape}), so the
 * label set stays bounded by the registered models.
 *
 * <p>Call figures (latencies, Books, Releases) are this node's. What the model's admission actor owns (live bookings,
 * queue depth, expired bookings) is exported only by the node hosting the actor, so a sum over nodes counts it once;
 * the view's version, lag and age and the KV index's counters are this node's copy's. The admission queue's series
 * carry a {@code class} label: a class the model's policy declares (at most {@link #MAX_CLASSES} per model, then
 * {@code other}), or {@code default}; rejections a {@code reason} too, one of the queue's fixed reasons.
 */
final class ModelMeters {
  /** Latency buckets: 10 µs to 10 s, enough to place an inline Select and a Book that queued. */
  static final Duration[] LATENCY_BUCKETS = buckets(10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
      2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000, 100_000_000, 250_000_000, 500_000_000, 1_000_000_000,
      2_500_000_000L, 10_000_000_000L);

  private final String model;
  private final MeterRegistry registry;
  private final Tags tags;
  private final List<Meter> meters = new ArrayList<>();
  /** By {@link Policy#index()}: made on a policy's first call, so a model shows only the policies it ran. */
  private final AtomicReferenceArray<Timer> selectTimers = new AtomicReferenceArray<>(Policy.values().size());
  private final AtomicReferenceArray<Timer> bookTimers = new AtomicReferenceArray<>(Policy.values().size());
  /** Queue waits of new bookings by class (made on a class's first Booked answer). */
  private final Map<String, Timer> queueWaits = new ConcurrentHashMap<>();
  private final Counter books;
  private final Counter releasesApplied;
  private final Counter releasesNotApplied;
  /** The scrape's samples of this node's copy: NaN until first read. */
  private volatile double viewLag = Double.NaN;
  private volatile double viewAgeSeconds = Double.NaN;
  /** The admission actor's figures while it runs on this node; null otherwise. */
  private volatile AdmissionSample admission;
  private List<Meter> admissionMeters = List.of();

  /** What the hosting node reads from the actor's snapshot at a scrape. */
  private record AdmissionSample(int liveBookings, int pending, long expired, QueueSnapshot queue) {}

  /** The most classes a model's series name; past that, {@code other}. */
  static final int MAX_CLASSES = 32;
  /** The queue's per-class series on the hosting node, by class (and reason), synced with each snapshot. */
  private final Map<String, Meter> queueMeters = new HashMap<>();

  ModelMeters(String model, MeterRegistry registry, RouterCluster cluster) {
    this.model = model;
    this.registry = registry;
    this.tags = Tags.of("model", model);
    books = add(Counter.builder("kvrouter.books").description("Books this node answered with a new booking")
        .tags(tags).register(registry));
    releasesApplied = add(Counter.builder("kvrouter.releases").description("Releases this node answered")
        .tags(tags).tag("applied", "true").register(registry));
    releasesNotApplied = add(Counter.builder("kvrouter.releases").description("Releases this node answered")
        .tags(tags).tag("applied", "false").register(registry));
    add(Gauge.builder("kvrouter.view.version", cluster, c -> viewVersion(c.client(model)))
        .description("Version of this node's view of the model").tags(tags).register(registry));
    add(Gauge.builder("kvrouter.view.lag.updates", this, m -> m.viewLag)
        .description("Replication updates the owner sent that this node's copy has not applied (0 on the owner)")
        .tags(tags).register(registry));
    add(Gauge.builder("kvrouter.view.age", this, m -> m.viewAgeSeconds).baseUnit("seconds")
        .description("Time since this node's copy last applied an update from the owner (0 on the owner)")
        .tags(tags).register(registry));
    kvCounter(cluster, "kvrouter.kv.events.applied", "KV events applied to this node's index",
        ModelKvIndex::appliedEventCount);
    kvCounter(cluster, "kvrouter.kv.event.gaps", "Event-id gaps declared (each clears the rank)",
        ModelKvIndex::gapCount);
    kvCounter(cluster, "kvrouter.kv.blocks.over.capacity",
        "Stored blocks dropped beyond a rank's bound (its KV blocks times blocks-per-kv-block)",
        ModelKvIndex::overCapacityBlockCount);
    kvCounter(cluster, "kvrouter.kv.stores.dropped", "Stored events dropped: their rank did not hold the parent",
        ModelKvIndex::droppedStoreCount);
    add(Gauge.builder("kvrouter.kv.events.held", cluster,
            c -> c.kvEvents().reorderCounters(model).held())
        .description("KV events held back waiting for lower event ids").tags(tags).register(registry));
    add(FunctionCounter.builder("kvrouter.kv.events.held.ever", cluster,
            c -> c.kvEvents().reorderCounters(model).heldTotal())
        .description("KV events that arrived before a lower id and were held").tags(tags).register(registry));
  }

  private void kvCounter(RouterCluster cluster, String name, String description, ToDoubleFunction<ModelKvIndex> read) {
    add(FunctionCounter.builder(name, cluster, c -> {
      ModelKvIndex index = c.kvIndex(model);
      return index == null ? 0 : read.applyAsDouble(index);
    }).description(description).tags(tags).register(registry));
  }

  private static double viewVersion(ModelClient client) {
    var view = client.view();
    return view == null ? Double.NaN : view.version();
  }

  private <M extends Meter> M add(M meter) {
    meters.add(meter);
    return meter;
  }

  void selected(Policy policy, long nanos) {
    timer(selectTimers, "kvrouter.select.duration", "Advisory Selects answered by this node", policy)
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  void booked(Policy policy, long nanos, long queuedMicros, boolean replay, String policyClass) {
    timer(bookTimers, "kvrouter.book.duration", "Books answered by this node, admission included", policy)
        .record(nanos, TimeUnit.NANOSECONDS);
    if (!replay) {
      books.increment();
      queueWait(policyClass).record(queuedMicros, TimeUnit.MICROSECONDS);
    }
  }

  private Timer queueWait(String policyClass) {
    String label = policyClass == null || policyClass.isEmpty() ? PolicyClass.DEFAULT : policyClass;
    Timer timer = queueWaits.get(label);
    if (timer != null) {
      return timer;
    }
    synchronized (this) {
      if (!queueWaits.containsKey(label) && queueWaits.size() >= MAX_CLASSES) {
        label = OTHER;
      }
      return queueWaits.computeIfAbsent(label, name -> add(Timer.builder("kvrouter.book.queue.wait")
          .description("Time a new booking waited in the model's admission queue (0 when admitted at once)")
          .tags(tags).tag("class", name).serviceLevelObjectives(LATENCY_BUCKETS).register(registry)));
    }
  }

  private static final String OTHER = "other";

  void released(boolean applied) {
    (applied ? releasesApplied : releasesNotApplied).increment();
  }

  private Timer timer(AtomicReferenceArray<Timer> timers, String name, String description, Policy policy) {
    Timer timer = timers.get(policy.index());
    if (timer != null) {
      return timer;
    }
    synchronized (this) {
      timer = timers.get(policy.index());
      if (timer == null) {
        timer = add(Timer.builder(name).description(description).tags(tags).tag("policy", policy.wireName())
            .serviceLevelObjectives(LATENCY_BUCKETS).register(registry));
        timers.set(policy.index(), timer);
      }
      return timer;
    }
  }

  /**
   * Reads what the gauges cannot read synchronously: the actor's snapshot where it runs here, else this node's
   * replica staleness. A read that fails or times out leaves the previous figures.
   */
  CompletionStage<?> refresh(ModelClient client, Duration timeout) {
    if (client.hostsAdmission()) {
      viewLag = 0;
      viewAgeSeconds = 0;
      return client.snapshot(timeout).handle((snapshot, failure) -> {
        if (snapshot != null) {
          hosting(snapshot);
        }
        return null;
      });
    }
    notHosting();
    return client.replicaStaleness(timeout).handle((staleness, failure) -> {
      if (failure == null) {
        viewLag = staleness == null ? Double.NaN : staleness.seqLag();
        viewAgeSeconds = staleness == null ? Double.NaN : staleness.ageMillis() / 1000.0;
      }
      return null;
    }).exceptionally(e -> null);
  }

  private synchronized void hosting(ModelSnapshot snapshot) {
    admission = new AdmissionSample(snapshot.bookings().size(), snapshot.pending(), snapshot.expiredBookings(),
        snapshot.queue());
    syncQueueMeters(snapshot.queue());
    if (!admissionMeters.isEmpty()) {
      return;
    }
    admissionMeters = List.of(
        Gauge.builder("kvrouter.bookings.live", this, m -> m.admissionFigure(AdmissionSample::liveBookings))
            .description("Live bookings of the model (exported by the node hosting its admission actor)")
            .tags(tags).register(registry),
        Gauge.builder("kvrouter.queue.depth", this, m -> m.admissionFigure(AdmissionSample::pending))
            .description("Books waiting in the model's admission queue (exported by the node hosting its actor)")
            .tags(tags).register(registry),
        FunctionCounter.builder("kvrouter.bookings.expired", this,
                m -> m.admissionFigure(s -> s.expired()))
            .description("Bookings whose lease expired, as the model's current admission actor counts them")
            .tags(tags).register(registry));
  }

  private synchronized void notHosting() {
    admission = null;
    admissionMeters.forEach(registry::remove);
    admissionMeters = List.of();
    queueMeters.values().forEach(registry::remove);
    queueMeters.clear();
  }

  /** One depth gauge and dispatched counter per class, one rejections counter per (class, reason) seen. */
  private void syncQueueMeters(QueueSnapshot queue) {
    Map<String, Meter> wanted = new HashMap<>();
    int classes = 0;
    for (QueueSnapshot.ClassSnapshot c : queue.classes()) {
      if (++classes > MAX_CLASSES) {
        break;
      }
      String name = c.name();
      wanted.put("depth " + name, queueMeters.computeIfAbsent("depth " + name, k ->
          Gauge.builder("kvrouter.queue.class.depth", this, m -> m.classFigure(name, s -> s.depth()))
              .description("Books waiting in one class of the model's admission queue (hosting node only)")
              .tags(tags).tag("class", name).register(registry)));
      wanted.put("dispatched " + name, queueMeters.computeIfAbsent("dispatched " + name, k ->
          FunctionCounter.builder("kvrouter.queue.dispatched", this, m -> m.classFigure(name, s -> s.dispatched()))
              .description("Books that left the class's queue booked, as the current admission actor counts them")
              .tags(tags).tag("class", name).register(registry)));
      for (String reason : c.rejections().keySet()) {
        String key = "rejected " + name + " " + reason;
        wanted.put(key, queueMeters.computeIfAbsent(key, k ->
            FunctionCounter.builder("kvrouter.queue.rejections", this,
                    m -> m.classFigure(name, s -> s.rejections().getOrDefault(reason, 0L)))
                .description("Books the class's queue refused or that left it unbooked, by reason, as the current "
                    + "admission actor counts them")
                .tags(tags).tag("class", name).tag("reason", reason).register(registry)));
      }
    }
    for (Map.Entry<String, Meter> meter : queueMeters.entrySet()) {
      if (!wanted.containsKey(meter.getKey())) {
        registry.remove(meter.getValue());
      }
    }
    queueMeters.keySet().retainAll(wanted.keySet());
  }

  private double classFigure(String name, ToDoubleFunction<QueueSnapshot.ClassSnapshot> read) {
    AdmissionSample sample = admission;
    if (sample == null) {
      return Double.NaN;
    }
    for (QueueSnapshot.ClassSnapshot c : sample.queue().classes()) {
      if (c.name().equals(name)) {
        return read.applyAsDouble(c);
      }
    }
    return Double.NaN;
  }

  private double admissionFigure(ToDoubleFunction<AdmissionSample> read) {
    AdmissionSample sample = admission;
    return sample == null ? Double.NaN : read.applyAsDouble(sample);
  }

  /** Removes every series of the model from the registry. */
  synchronized void remove() {
    notHosting();
    meters.forEach(registry::remove);
  }

  String model() {
    return model;
  }

  private static Duration[] buckets(long... nanos) {
    Duration[] out = new Duration[nanos.length];
    for (int i = 0; i < nanos.length; i++) {
      out[i] = Duration.ofNanos(nanos[i]);
    }
    return out;
  }
}
