package io.kvrouter.bench;

import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.Requests;
import io.kvrouter.server.RouterNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.AbstractHistogram;
import org.HdrHistogram.Histogram;
import org.apache.pekko.actor.Address;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * {@code bench cluster}: one region of three router nodes in this JVM on loopback ({@link LoopbackRegion}), the
 * issue-10 measurements side by side in one run:
 *
 * <ol>
 *   <li>view propagation: from the owner's change (a Book's or Release's load record, a Register's view) to another
 *       node's view, at paced Book rates from 1k/s up to the highest the host sustains;
 *   <li>Books through a node that does not host the model's actor vs through the one that does;
 *   <li>the owner's Books/s with replication on and off ({@code kvrouter.replication.enabled}, two regions);
 *   <li>failover: kill the owner (once when it is the oldest node, once when not) under Book/Release load through the
 *       two other nodes; time to the first admitted Book; bookings recovered vs acknowledged.
 * </ol>
 *
 * It also watches every node's membership throughout (1–3) to check that the loopback failure-detection values do
 * not make the resolver down a healthy node under load.
 */
final class ClusterBench {
  static final String MODEL = "bench/cluster";
  private static final Duration CALL = Duration.ofSeconds(2);
  /** A paced run stops issuing (and counts the rate as saturated) above this many Books in flight. */
  private static final int MAX_IN_FLIGHT = 4096;

  /**
   * {@code warmupMillis}: untimed windows through each path of a side-by-side before it is measured. A relayed Book
   * runs code the owner's never does (Artery's streams, the serializers, the shard regions): on 2 busy CPUs the JIT
   * takes seconds to compile it, and a single 200 ms warm-up window measured the interpreter (280 relayed Books/s).
   */
  record Settings(int workers, int threads, long paceMillis, int[] rates, int viewChanges, int[] callers,
      int rounds, long windowMillis, int maxCallsPerWindow, long warmupMillis, int heldBookings, int loadCallers,
      long holdMillis, long failoverMaxMillis, long afterRecoveryMillis) {
    static Settings defaults(boolean quick) {
      return quick
          ? new Settings(4, 4, 500, new int[] {1_000, 2_000}, 4, new int[] {16}, 1, 200, 2_000, 3_000, 20, 4, 20,
              30_000, 500)
          : new Settings(4, 4, 10_000, new int[] {1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000}, 100,
              new int[] {16, 64}, 5, 1_000, 100_000, 10_000, 200, 8, 20, 60_000, 3_000);
    }
  }

  private ClusterBench() {}

  static List<Path> run(Path out, boolean quick) throws Exception {
    Settings s = Settings.defaults(quick);
    ExecutorService pool = Fixtures.pool("caller", s.threads());
    Report report = new Report("Cluster: one region of three nodes (views, relaying, replication, failover)");
    report.paragraph(String.format("Three router nodes in this JVM (`LoopbackRegion`: `Main.init` with every port "
        + "ephemeral on 127.0.0.1, the first node forming the cluster, the others joining it through "
        + "`kvrouter.cluster.seed-nodes`, failure-detection profile `loopback`), one model of %d workers "
        + "(least_in_flight) registered through node 1; the *owner* is the node hosting its admission actor. Calls "
        + "go through each node's `ModelClient`, as its gRPC services do; callers are tasks on a pool of %d "
        + "threads. CPU per call is the whole process's CPU (all three nodes) over the calls.", s.workers(),
        s.threads()));
    try {
      MembershipWatch healthy;
      try (LoopbackRegion on = LoopbackRegion.start(3, replication(true))) {
        healthy = new MembershipWatch(on);
        healthy.start();
        Placement model = place(on, s.workers(), 0);
        propagation(report, on, model, s, pool);
        nonOwner(report, on, model, s, pool);
        LoopbackRegion off = LoopbackRegion.start(3, replication(false));
        try {
          healthy.add(off);
          replicationCost(report, on, model, off, place(off, s.workers(), 0), s, pool);
        } finally {
          healthy.stop(); // before any region closes: leaving members are not downed ones
          off.close();
        }
      }
      report.heading("Healthy nodes under load");
      report.paragraph(String.format("Every node's view of the membership, polled every 5 ms during the three "
          + "parts above (both regions): members seen unreachable %d times (distinct observations), members "
          + "downed or removed: %d. With the loopback profile (heartbeat 250 ms, acceptable pause 1.5 s, "
          + "stable-after 2 s) no healthy node may be downed.", healthy.unreachableObservations(),
          healthy.downedOrRemoved()));
      failover(report, s, pool);
    } finally {
      pool.shutdownNow();
    }
    return List.of(report.write(out, "cluster.md"));
  }

  static String replication(boolean enabled) {
    return "kvrouter.replication.enabled = " + (enabled ? "on" : "off") + "\n";
  }

  // ---------------------------------------------------------------------------------------------------- placement

  /** A model registered on a region: its name, the node hosting its actor, and its ranks. */
  record Placement(String model, int owner, List<Rank> ranks) {}

  /**
   * Registers {@code workers} workers of a model through node {@code via}; returns where its actor runs. Sharding
   * places a new shard on the least-loaded region, the requester's when tied.
   */
  static Placement place(LoopbackRegion region, int workers, int via) {
    return place(region, MODEL, workers, via);
  }

  static Placement place(LoopbackRegion region, String model, int workers, int via) {
    List<Rank> ranks = new ArrayList<>();
    RouterNode node = region.node(via);
    for (int i = 0; i < workers; i++) {
      BenchCluster.join(node.cluster().client(model).register(Fixtures.worker(Fixtures.workerId(i)), CALL));
      ranks.add(Fixtures.worker(Fixtures.workerId(i)).rank(0));
    }
    int owner = region.hostOf(model);
    if (owner < 0) {
      throw new IllegalStateException("no node hosts " + model + " after its Register");
    }
    BenchCluster.join(region.node(owner).cluster().client(model).setPolicy("least_in_flight", Map.of(), CALL));
    awaitKnownEverywhere(region, model, workers);
    return new Placement(model, owner, ranks);
  }

  /**
   * Waits (at most 5 s) until every node's view of the model has its workers, so calls through any node find it; a
   * build whose nodes learn only of the models they host waits the 5 s and goes on.
   */
  private static void awaitKnownEverywhere(LoopbackRegion region, String model, int workers) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    for (int i = 0; i < region.size(); i++) {
      while (System.nanoTime() < deadline) {
        SelectionView view = region.node(i).cluster().view(model);
        if (view != null && view.workers().size() >= workers) {
          break;
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
      }
    }
  }

  static int other(LoopbackRegion region, int not) {
    return (not + 1) % region.size();
  }

  // -------------------------------------------------------------------------------------------------- propagation

  /** One paced rate's outcome. */
  record PacedRow(int targetRate, double achievedRate, long failures, boolean saturated, Propagation.Result loads,
      long bookP99Nanos) {}

  private static void propagation(Report report, LoopbackRegion region, Placement model, Settings s,
      ExecutorService pool) {
    int observer = other(region, model.owner());
    ModelClient owner = region.node(model.owner()).cluster().client(model.model());
    List<PacedRow> rows = new ArrayList<>();
    // warm-up (JIT): the first rate's window would otherwise include the compilation of the Book path and of the
    // replication path (Artery, the serializers, the replica's apply)
    paced(owner, s.rates()[0], Math.max(s.paceMillis() / 2, s.warmupMillis()),
        new Histogram(1, TimeUnit.SECONDS.toNanos(60), 3), pool);
    boolean saturated = false;
    for (int rate : s.rates()) {
      if (saturated) {
        break;
      }
      Propagation watch = new Propagation(region.node(model.owner()), region.node(observer), model);
      watch.start();
      Histogram latency = new Histogram(1, TimeUnit.SECONDS.toNanos(60), 3);
      Paced run = paced(owner, rate, s.paceMillis(), latency, pool);
      Propagation.Result loads = watch.stop();
      saturated = run.saturated();
      PacedRow row = new PacedRow(rate, run.achieved(), run.failures(), run.saturated(), loads,
          latency.getValueAtPercentile(99));
      Progress.line("cluster", "propagation at %s Books/s: achieved %s/s%s, load records p50 %s / p99 %s µs "
              + "(%d seen, %d never)", Report.rate(rate), Report.rate(row.achievedRate()),
          row.saturated() ? " (saturated)" : "", loads.p50Us(), loads.p99Us(), loads.seen(),
          loads.missing());
      rows.add(row);
    }
    // view changes: a Register / Deregister of one more worker, through the owner, one at a time
    Propagation watch = new Propagation(region.node(model.owner()), region.node(observer), model);
    watch.start();
    io.kvrouter.core.model.WorkerConfig extra = Fixtures.worker("extra");
    for (int i = 0; i < s.viewChanges(); i++) {
      BenchCluster.join(owner.register(extra, CALL));
      BenchCluster.join(region.node(model.owner()).cluster().client(model.model()).deregister("extra", CALL));
    }
    Propagation.Result views = watch.stopViews();

    report.heading("View propagation");
    report.paragraph(String.format("The owner (node %d) books and releases at a paced rate (each Book of a fresh "
        + "request id released as soon as it is answered, for %,d ms per rate after a warm-up at the first rate "
        + "for %,d ms (JIT); achieved = Books answered within "
        + "the window; rates double until the achieved rate falls below 95 %% of the target or more than %,d "
        + "Books are in flight: *saturated*, and the last unsaturated rate is the highest the host sustains). A "
        + "watcher thread polls the owner's and node %d's `SelectionView` every 50 µs and keeps, per rank cell, "
        + "each load-record sequence number a poll finds on the owner with the poll's time; each new number the "
        + "other node shows is one sample: its poll time minus the time the owner first showed that number or a "
        + "later one (resolution ≈ the polling interval; the number is model-wide, so one sample may cover "
        + "several changes). *never* = owner values the other node had not reached 1 s after the load stopped. "
        + "Target: p99 ≤ 10 ms.", model.owner() + 1,
        s.paceMillis(), Math.max(s.paceMillis() / 2, s.warmupMillis()), MAX_IN_FLIGHT, observer + 1));
    Report.Table table = new Report.Table("target Books/s", "achieved Books/s", "saturated", "Book+Release p99 (µs)",
        "load records seen", "never", "p50 (µs)", "p99 (µs)", "max (µs)", "target p99 ≤ 10 ms");
    for (PacedRow r : rows) {
      table.row(Report.rate(r.targetRate()), Report.rate(r.achievedRate()), r.saturated() ? "yes" : "no",
          Report.us(r.bookP99Nanos()), r.loads().seen(), r.loads().missing(), r.loads().p50Us(),
          r.loads().p99Us(), r.loads().maxUs(),
          r.loads().seen() == 0 ? "–" : Report.verdict(r.loads().p99() <= 10_000_000));
    }
    report.table(table);
    report.paragraph(String.format("Views: %d Register + Deregister pairs of one more worker through the owner, "
            + "one at a time: %d view versions seen on the other node (%d never), p50 %s µs, p99 %s µs, max %s µs.",
        s.viewChanges(), views.seen(), views.missing(), views.p50Us(), views.p99Us(), views.maxUs()));
    if (views.seen() == 0 && rows.stream().allMatch(r -> r.loads().seen() == 0)) {
      report.paragraph("**No view or load record of the owner ever reached the other node: this build does not "
          + "replicate views (issue 10). The propagation, non-owner and replication figures of this file are then "
          + "not measurements of replication; the membership figures (healthy nodes; failover up to the shard "
          + "being served again) are.**");
    }
  }

  /** The outcome of a paced run. */
  record Paced(double achieved, long failures, boolean saturated) {}

  /**
   * Books of fresh request ids at {@code rate} per second for {@code millis}, each released when answered; issued
   * from this thread on a fixed schedule (it catches up when late), at most {@link #MAX_IN_FLIGHT} in flight.
   */
  private static Paced paced(ModelClient client, int rate, long millis, AbstractHistogram latency,
      ExecutorService pool) {
    AtomicLong done = new AtomicLong();
    AtomicLong failures = new AtomicLong();
    AtomicInteger inFlight = new AtomicInteger();
    boolean capped = false;
    long start = System.nanoTime();
    long end = start + TimeUnit.MILLISECONDS.toNanos(millis);
    long intervalNanos = 1_000_000_000L / rate;
    long issued = 0;
    String prefix = "paced-" + rate + "-";
    while (true) {
      long due = start + issued * intervalNanos;
      if (due >= end) {
        break;
      }
      long now = System.nanoTime();
      if (now < due) {
        LockSupport.parkNanos(due - now);
        continue;
      }
      if (inFlight.get() >= MAX_IN_FLIGHT) {
        capped = true;
        break;
      }
      inFlight.incrementAndGet();
      long t0 = System.nanoTime();
      client.book(Requests.of(client.model(), prefix + issued, 512), CALL)
          .thenComposeAsync(answer -> client.release(answer.requestId(), answer.attempt(), CALL), pool)
          .whenComplete((released, failure) -> {
            if (failure != null) {
              failures.incrementAndGet();
            } else {
              synchronized (latency) {
                latency.recordValue(Math.min(latency.getHighestTrackableValue(), System.nanoTime() - t0));
              }
            }
            done.incrementAndGet();
            inFlight.decrementAndGet();
          });
      issued++;
    }
    long elapsed = System.nanoTime() - start;
    long completedInWindow = done.get();
    long drainDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (inFlight.get() > 0 && System.nanoTime() < drainDeadline) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }
    // Books answered (and released) within the window: below the target when the node falls behind
    double achieved = completedInWindow * 1e9 / Math.max(1, elapsed);
    return new Paced(achieved, failures.get(), capped || achieved < 0.95 * rate || inFlight.get() > 0);
  }

  /**
   * A thread polling two nodes' views of a model every 50 µs. A rank cell's load-record sequence number (model-wide:
   * it grows by more than one between two changes of one rank) and the view version only grow on the owner; each
   * value a poll finds on the owner is kept with the poll's time. When the observer shows a new value X, the sample
   * is its poll time minus the time of the first owner poll that showed X or more.
   */
  static final class Propagation {
    private static final long POLL_NANOS = 50_000;
    private static final long DRAIN_NANOS = TimeUnit.SECONDS.toNanos(1);

    record Result(long seen, long missing, double p50, double p99, double max) {
      static Result of(AbstractHistogram h, long missing) {
        long n = h.getTotalCount();
        return new Result(n, missing, n == 0 ? Double.NaN : h.getValueAtPercentile(50),
            n == 0 ? Double.NaN : h.getValueAtPercentile(99), n == 0 ? Double.NaN : h.getMaxValue());
      }

      String p50Us() {
        return seen == 0 ? "–" : Report.us(p50);
      }

      String p99Us() {
        return seen == 0 ? "–" : Report.us(p99);
      }

      String maxUs() {
        return seen == 0 ? "–" : Report.us(max);
      }
    }

    /** One growing number's history: the values one node showed, in order, with when they were first seen. */
    static final class Track {
      private long[] values = new long[1024];
      private long[] times = new long[1024];
      private int size;
      private long ownerLast = Long.MIN_VALUE;
      private long observerLast = Long.MIN_VALUE;
      private int observedUpTo; // entries whose value the observer has shown

      /** The value at the start: neither node's earlier changes are measured. */
      void baseline(long owner, long observer) {
        ownerLast = owner;
        observerLast = Math.max(owner, observer);
      }

      void owner(long value, long now) {
        if (value <= ownerLast) {
          return;
        }
        if (size == values.length) {
          values = java.util.Arrays.copyOf(values, size * 2);
          times = java.util.Arrays.copyOf(times, size * 2);
        }
        values[size] = value;
        times[size++] = now;
        ownerLast = value;
      }

      void observer(long value, long now, AbstractHistogram samples) {
        if (value <= observerLast) {
          return;
        }
        observerLast = value;
        int first = firstAtLeast(value);
        if (first < size) {
          samples.recordValue(Math.max(1, now - times[first]));
          // every owner change up to this value has now reached the observer
          int through = first;
          while (through < size && values[through] <= value) {
            through++;
          }
          observedUpTo = Math.max(observedUpTo, through);
        }
      }

      /** Owner changes the observer never showed. */
      long missing() {
        return size - observedUpTo;
      }

      private int firstAtLeast(long value) {
        int lo = 0;
        int hi = size;
        while (lo < hi) {
          int mid = (lo + hi) >>> 1;
          if (values[mid] < value) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        return lo;
      }
    }

    private final RouterCluster owner;
    private final RouterCluster observer;
    private final String model;
    private final Map<Rank, Integer> rankIndex = new HashMap<>();
    private final Track[] loads;
    private final Track versions = new Track();
    private final Histogram loadSamples = new Histogram(1, TimeUnit.SECONDS.toNanos(60), 3);
    private final Histogram viewSamples = new Histogram(1, TimeUnit.SECONDS.toNanos(60), 3);
    private volatile boolean stopping;
    private volatile long stopAt;
    private final Thread thread;

    Propagation(RouterNode owner, RouterNode observer, Placement model) {
      this.owner = owner.cluster();
      this.observer = observer.cluster();
      this.model = model.model();
      for (Rank rank : model.ranks()) {
        rankIndex.put(rank, rankIndex.size());
      }
      loads = new Track[rankIndex.size()];
      for (int i = 0; i < loads.length; i++) {
        loads[i] = new Track();
      }
      thread = new Thread(this::loop, "propagation-watch");
      thread.setDaemon(true);
    }

    void start() {
      thread.start();
    }

    private void loop() {
      baseline();
      while (!stopping || System.nanoTime() - stopAt < DRAIN_NANOS) {
        poll(System.nanoTime());
        LockSupport.parkNanos(POLL_NANOS);
      }
    }

    private void baseline() {
      long[] ownerSeq = new long[loads.length];
      long[] observerSeq = new long[loads.length];
      SelectionView o = owner.view(model);
      SelectionView b = observer.view(model);
      if (o != null) {
        forEachRank(o, (i, seq) -> ownerSeq[i] = seq);
      }
      if (b != null) {
        forEachRank(b, (i, seq) -> observerSeq[i] = seq);
      }
      for (int i = 0; i < loads.length; i++) {
        loads[i].baseline(ownerSeq[i], observerSeq[i]);
      }
      versions.baseline(o == null ? 0 : o.version(), b == null ? 0 : b.version());
    }

    private void poll(long now) {
      SelectionView o = owner.view(model);
      if (o != null) {
        versions.owner(o.version(), now);
        forEachRank(o, (i, seq) -> loads[i].owner(seq, now));
      }
      SelectionView b = observer.view(model);
      if (b != null) {
        versions.observer(b.version(), now, viewSamples);
        forEachRank(b, (i, seq) -> loads[i].observer(seq, now, loadSamples));
      }
    }

    private interface RankSeq {
      void accept(int index, long seq);
    }

    private void forEachRank(SelectionView view, RankSeq action) {
      for (int c = 0; c < view.rankCount(); c++) {
        Integer i = rankIndex.get(view.rank(c));
        if (i != null) {
          action.accept(i, view.cell(c).booked().seq());
        }
      }
    }

    private void finish() {
      stopAt = System.nanoTime();
      stopping = true;
      try {
        thread.join(TimeUnit.SECONDS.toMillis(10));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    /** Stops after the drain second; the load records' result. */
    Result stop() {
      finish();
      long missing = 0;
      for (Track t : loads) {
        missing += t.missing();
      }
      return Result.of(loadSamples, missing);
    }

    /** Stops after the drain second; the view versions' result. */
    Result stopViews() {
      finish();
      return Result.of(viewSamples, versions.missing());
    }
  }

  // ----------------------------------------------------------------------------------------------- through a node

  /** Books alone through one node's facade: fresh request ids, the window's bookings released after it. */
  private static Callers.AsyncCall booksThrough(ModelClient client, Queue<BookingAnswer> held, AtomicLong ids,
      ExecutorService pool) {
    return caller -> client.book(Requests.of(client.model(), "b-" + ids.incrementAndGet(), 512), CALL)
        .thenAcceptAsync(held::add, pool);
  }

  /** A Book and, once answered, the Release of its booking, both through one node's facade. */
  private static Callers.AsyncCall pairsThrough(ModelClient client, AtomicLong ids) {
    return caller -> client.book(Requests.of(client.model(), "p-" + ids.incrementAndGet(), 512), CALL)
        .thenCompose(answer -> client.release(answer.requestId(), answer.attempt(), CALL));
  }

  private static void releaseAll(ModelClient client, Queue<BookingAnswer> held) {
    List<CompletableFuture<?>> releases = new ArrayList<>();
    for (BookingAnswer answer; (answer = held.poll()) != null; ) {
      releases.add(client.release(answer.requestId(), answer.attempt(), CALL).toCompletableFuture());
    }
    BenchCluster.join(CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new)));
  }

  /** Two paths measured in alternating untimed windows, rounds × callers; the median round of each. */
  record SideBySide(int callers, Callers.Result first, String firstRange, Callers.Result second,
      String secondRange) {
    double ratio() {
      return second.callsPerSecond() / first.callsPerSecond();
    }
  }

  static List<SideBySide> sideBySide(String what, ModelClient first, ModelClient firstReleaser,
      ModelClient second, ModelClient secondReleaser, Settings s, ExecutorService pool) {
    AtomicLong ids = new AtomicLong();
    Queue<BookingAnswer> heldFirst = new ConcurrentLinkedQueue<>();
    Queue<BookingAnswer> heldSecond = new ConcurrentLinkedQueue<>();
    return sideBySide(what, booksThrough(first, heldFirst, ids, pool), firstReleaser, heldFirst,
        booksThrough(second, heldSecond, ids, pool), secondReleaser, heldSecond, s, pool);
  }

  /** Book + Release pairs through {@code first} and through {@code second}, as {@link #sideBySide} Books. */
  static List<SideBySide> pairsSideBySide(String what, ModelClient first, ModelClient second, Settings s,
      ExecutorService pool) {
    AtomicLong ids = new AtomicLong();
    Queue<BookingAnswer> none = new ConcurrentLinkedQueue<>();
    return sideBySide(what, pairsThrough(first, ids), first, none, pairsThrough(second, ids), second, none, s, pool);
  }

  private static List<SideBySide> sideBySide(String what, Callers.AsyncCall a, ModelClient firstReleaser,
      Queue<BookingAnswer> heldFirst, Callers.AsyncCall b, ModelClient secondReleaser, Queue<BookingAnswer> heldSecond,
      Settings s, ExecutorService pool) {
    List<SideBySide> rows = new ArrayList<>();
    for (int callers : s.callers()) {
      warmUp(a, firstReleaser, heldFirst, callers, s, pool);
      warmUp(b, secondReleaser, heldSecond, callers, s, pool);
      List<Callers.Result> firstRuns = new ArrayList<>();
      List<Callers.Result> secondRuns = new ArrayList<>();
      for (int round = 0; round < s.rounds(); round++) {
        boolean firstFirst = round % 2 == 0;
        for (int k = 0; k < 2; k++) {
          if ((k == 0) == firstFirst) {
            firstRuns.add(Callers.runChainedFor(pool, callers, s.windowMillis(), s.maxCallsPerWindow(), a));
            releaseAll(firstReleaser, heldFirst);
          } else {
            secondRuns.add(Callers.runChainedFor(pool, callers, s.windowMillis(), s.maxCallsPerWindow(), b));
            releaseAll(secondReleaser, heldSecond);
          }
        }
      }
      SideBySide row = new SideBySide(callers, Callers.median(firstRuns), Callers.range(firstRuns),
          Callers.median(secondRuns), Callers.range(secondRuns));
      Progress.line("cluster", "%s, %d callers: %s/s (%d failed) vs %s/s (%d failed): %s", what, callers,
          Report.rate(row.first().callsPerSecond()), row.first().failures(),
          Report.rate(row.second().callsPerSecond()), row.second().failures(), Report.ratio(row.ratio()));
      rows.add(row);
    }
    return rows;
  }

  /** Untimed windows through one path for {@code warmupMillis} (JIT), each window's bookings released after it. */
  private static void warmUp(Callers.AsyncCall path, ModelClient releaser, Queue<BookingAnswer> held, int callers,
      Settings s, ExecutorService pool) {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(s.warmupMillis());
    do {
      Callers.runChainedFor(pool, callers, s.windowMillis(), s.maxCallsPerWindow(), path);
      releaseAll(releaser, held);
    } while (System.nanoTime() < end);
  }

  private static void nonOwner(Report report, LoopbackRegion region, Placement model, Settings s,
      ExecutorService pool) {
    int relay = other(region, model.owner());
    ModelClient owner = region.node(model.owner()).cluster().client(model.model());
    ModelClient through = region.node(relay).cluster().client(model.model());
    List<SideBySide> rows = sideBySide("owner vs non-owner", owner, owner, through, owner, s, pool);
    report.heading("Book through a node that does not host the model's actor");
    report.paragraph(String.format("Books alone (each of a fresh request id; the window's bookings released "
            + "through the owner after it, untimed) through the owner's facade (node %d) and through node %d's, "
            + "whose Books cross to the owner through the shard region; after %,d ms of untimed warm-up windows "
            + "through each (JIT), %d rounds of alternating %,d ms windows (at most %,d Books each), median round, "
            + "range over rounds. Failed: Books answered with an error (every one should book). Target: non-owner "
            + "≥ 0.5× the owner's calls/s.", model.owner() + 1, relay + 1, s.warmupMillis(), s.rounds(),
        s.windowMillis(), s.maxCallsPerWindow()));
    Report.Table table = new Report.Table("callers", "owner Books/s", "owner CPU µs/Book", "owner failed",
        "non-owner Books/s", "non-owner CPU µs/Book", "non-owner failed", "non-owner ÷ owner", "target ≥ 0.5×",
        "range owner; non-owner");
    for (SideBySide r : rows) {
      table.row(r.callers(), Report.rate(r.first().callsPerSecond()), Report.us(r.first().cpuNanosPerCall()),
          r.first().failures(), Report.rate(r.second().callsPerSecond()), Report.us(r.second().cpuNanosPerCall()),
          r.second().failures(), Report.ratio(r.ratio()),
          r.second().failures() > 0 ? "– (failures)" : Report.verdict(r.ratio() >= 0.5),
          r.firstRange() + "; " + r.secondRange());
    }
    report.table(table);
  }

  // ------------------------------------------------------------------------------------------- relay variants

  /** One configuration of the relay path measured by {@link #runRelay}: its name and the HOCON it lays over. */
  record RelayVariant(String name, String config) {}

  /** The relay path the transport rows of {@link #RELAY_VARIANTS} start from. */
  private static final String TUNED_RELAY =
      "kvrouter.admission.relay { mode = reply-endpoint, coalesce-above = 4, max-batch = 64, direct = on }\n";

  /** The relay paths and transport settings {@code bench cluster-relay} compares, each over the production config. */
  static final List<RelayVariant> RELAY_VARIANTS = List.of(
      new RelayVariant("ask per Book", "kvrouter.admission.relay.mode = ask\n"),
      new RelayVariant("reply endpoint", "kvrouter.admission.relay { mode = reply-endpoint, coalesce-above = 0 }\n"),
      new RelayVariant("reply endpoint, coalescing above 4 (batch ≤ 64)",
          "kvrouter.admission.relay { mode = reply-endpoint, coalesce-above = 4, max-batch = 64 }\n"),
      new RelayVariant("reply endpoint, coalescing above 16 (batch ≤ 64)",
          "kvrouter.admission.relay { mode = reply-endpoint, coalesce-above = 16, max-batch = 64 }\n"),
      new RelayVariant("reply endpoint, direct",
          "kvrouter.admission.relay { mode = reply-endpoint, coalesce-above = 0, direct = on }\n"),
      new RelayVariant("reply endpoint, direct, coalescing above 4 (batch ≤ 64)",
          "kvrouter.admission.relay { mode = reply-endpoint, coalesce-above = 4, max-batch = 64, direct = on }\n"),
      // transport settings, each alone over the relay path above
      new RelayVariant("… + Artery inbound-lanes = 1", TUNED_RELAY + "pekko.remote.artery.advanced.inbound-lanes = 1\n"),
      new RelayVariant("… + default-remote-dispatcher 1 thread", TUNED_RELAY
          + "pekko.remote.default-remote-dispatcher.fork-join-executor { parallelism-min = 1, parallelism-max = 1 }\n"),
      new RelayVariant("… + default-dispatcher 2 threads", TUNED_RELAY
          + "pekko.actor.default-dispatcher.fork-join-executor { parallelism-min = 2, parallelism-max = 2 }\n"),
      new RelayVariant("… + internal-dispatcher 2 threads", TUNED_RELAY
          + "pekko.actor.internal-dispatcher.fork-join-executor { parallelism-min = 2, parallelism-max = 2 }\n"),
      new RelayVariant("… + sharding and remoting on the internal dispatcher", TUNED_RELAY
          + "pekko.remote.artery.advanced.use-dispatcher = pekko.actor.internal-dispatcher\n"),
      new RelayVariant("… + Artery TCP coalesce-writes 30", TUNED_RELAY
          + "pekko.stream.materializer.io.tcp.coalesce-writes = 30\n"),
      // what the majority's acknowledgement costs both paths (answers before replication: the last ones before an
      // owner's death can be lost; reference.conf, wait-for-majority)
      new RelayVariant("… + replication without waiting for the majority", TUNED_RELAY
          + "kvrouter.replication.wait-for-majority = off\n"),
      // kvrouter's records as CBOR maps keyed by component names: Pekko's Jackson modules without
      // CompactRecordsModule
      new RelayVariant("… + records as maps (no CompactRecordsModule)", TUNED_RELAY + jacksonModules()));

  /** HOCON setting the CBOR serializer's Jackson modules to Pekko's defaults alone. */
  private static String jacksonModules() {
    List<String> modules = List.of("org.apache.pekko.serialization.jackson.PekkoJacksonModule",
        "org.apache.pekko.serialization.jackson.PekkoTypedJacksonModule",
        "org.apache.pekko.serialization.jackson.PekkoStreamJacksonModule",
        "com.fasterxml.jackson.module.paramnames.ParameterNamesModule",
        "com.fasterxml.jackson.datatype.jdk8.Jdk8Module", "com.fasterxml.jackson.datatype.jsr310.JavaTimeModule",
        "com.fasterxml.jackson.module.scala.DefaultScalaModule");
    return "pekko.serialization.jackson.jackson-modules = [" + String.join(", ",
        modules.stream().map(m -> "\"" + m + "\"").toList()) + "]\n";
  }


  /**
   * {@code bench cluster-relay}: for each {@link RelayVariant}, a fresh region of three nodes with it, Books through
   * the owner and through a non-owner side by side (as {@link #nonOwner}), at 16 and 64 callers; a row per variant
   * and callers, with the load average after it. The variants named by {@code kvrouter.bench.relay-variants}
   * (comma-separated indexes) run alone.
   */
  static List<Path> runRelay(Path out, boolean quick) throws Exception {
    Settings d = Settings.defaults(quick);
    // shorter than `bench cluster`'s section: one region per variant
    Settings s = quick ? d : new Settings(d.workers(), d.threads(), d.paceMillis(), d.rates(), d.viewChanges(),
        d.callers(), 3, 1_000, d.maxCallsPerWindow(), 6_000, d.heldBookings(), d.loadCallers(), d.holdMillis(),
        d.failoverMaxMillis(), d.afterRecoveryMillis());
    List<RelayVariant> variants = RELAY_VARIANTS;
    String only = System.getProperty("kvrouter.bench.relay-variants");
    if (only != null && !only.isBlank()) {
      variants = java.util.Arrays.stream(only.split(",")).map(String::trim).mapToInt(Integer::parseInt)
          .mapToObj(RELAY_VARIANTS::get).toList();
    }
    ExecutorService pool = Fixtures.pool("caller", s.threads());
    Report report = new Report("Cluster: Books through a non-owner node, per relay path and transport setting");
    Report.Table table = new Report.Table("variant", "callers", "owner Books/s", "owner CPU µs/Book",
        "non-owner Books/s", "non-owner CPU µs/Book", "failed owner; non-owner", "non-owner ÷ owner",
        "target ≥ 0.5×", "range owner; non-owner", "load avg 1 min");
    Report.Table pairs = new Report.Table("variant", "callers", "owner pairs/s", "owner CPU µs/pair",
        "non-owner pairs/s", "non-owner CPU µs/pair", "failed owner; non-owner", "non-owner ÷ owner",
        "range owner; non-owner", "load avg 1 min");
    try {
      for (RelayVariant variant : variants) {
        try (LoopbackRegion region = LoopbackRegion.start(3, replication(true) + variant.config())) {
          if (variant == variants.get(0)) {
            serializationCost(report, region, place(region, "bench/serialization", s.workers(), 0), quick);
          }
          Placement model = place(region, s.workers(), 0);
          int relay = other(region, model.owner());
          ModelClient owner = region.node(model.owner()).cluster().client(model.model());
          ModelClient through = region.node(relay).cluster().client(model.model());
          for (SideBySide r : sideBySide(variant.name(), owner, owner, through, owner, s, pool)) {
            table.row(variant.name(), r.callers(), Report.rate(r.first().callsPerSecond()),
                Report.us(r.first().cpuNanosPerCall()), Report.rate(r.second().callsPerSecond()),
                Report.us(r.second().cpuNanosPerCall()), r.first().failures() + "; " + r.second().failures(),
                Report.ratio(r.ratio()), r.second().failures() > 0 ? "– (failures)" : Report.verdict(r.ratio() >= 0.5),
                r.firstRange() + "; " + r.secondRange(), loadAverage1());
          }
          for (SideBySide r : pairsSideBySide(variant.name() + ", Book + Release", owner, through, s, pool)) {
            pairs.row(variant.name(), r.callers(), Report.rate(r.first().callsPerSecond()),
                Report.us(r.first().cpuNanosPerCall()), Report.rate(r.second().callsPerSecond()),
                Report.us(r.second().cpuNanosPerCall()), r.first().failures() + "; " + r.second().failures(),
                Report.ratio(r.ratio()), r.firstRange() + "; " + r.secondRange(), loadAverage1());
          }
        }
      }
    } finally {
      pool.shutdownNow();
    }
    report.heading("Books through the owner and through a non-owner");
    report.paragraph(String.format("For each variant a fresh region of three router nodes in this JVM "
        + "(`LoopbackRegion`, replication on, the variant's HOCON over the production config), one model of %d "
        + "workers (least_in_flight); Books alone (fresh request ids, each window's bookings released through the "
        + "owner after it, untimed) through the owner's facade and through another node's, whose Books cross to the "
        + "owner; after %,d ms of untimed warm-up windows through each (JIT), %d rounds of alternating %,d ms "
        + "windows, median round, range over rounds; callers are tasks on a pool of %d threads. CPU per Book is the "
        + "whole process's (all three nodes). Target: non-owner ≥ 0.5× the owner.", s.workers(), s.warmupMillis(),
        s.rounds(), s.windowMillis(), s.threads()));
    report.table(table);
    report.heading("Book + Release pairs through the owner and through a non-owner");
    report.paragraph("The same regions, after the Books: each call a Book of a fresh request id and, once answered, "
        + "the Release of its booking through the same node's facade (through a non-owner both cross to the owner: "
        + "the Release by the relay too, except with mode = ask); windows, rounds and callers as above. No target: "
        + "what a booking's whole lifecycle costs through each path.");
    report.table(pairs);
    StringBuilder configs = new StringBuilder("Variants:\n\n");
    for (RelayVariant v : variants) {
      configs.append("- *").append(v.name()).append("*: `").append(v.config().trim().replace("\n", "; "))
          .append("`\n");
    }
    report.paragraph(configs.toString().trim());
    return List.of(report.write(out, "cluster-relay.md"));
  }

  /**
   * A replication delta carrying {@code bookings} bookings opened like {@code answer} (64 sequence hashes each, the
   * bench's 1,024-token request at block size 16) and their ranks' loads.
   */
  private static io.kvrouter.cluster.replication.ReplicaActor.Delta replicaDelta(String model, BookingAnswer answer,
      org.apache.pekko.actor.typed.ActorRef<Object> owner, int bookings) {
    List<io.kvrouter.core.replication.LedgerSnapshot.Entry> opened = new java.util.ArrayList<>();
    long[] hashes = new java.util.Random(7).longs(64).toArray();
    for (int i = 0; i < bookings; i++) {
      opened.add(new io.kvrouter.core.replication.LedgerSnapshot.Entry("delta-" + i, i + 1,
          answer.selection().rank(), 1024, 64, System.currentTimeMillis(), 0, answer.selection(), hashes,
          0x5eedL + i, false, answer.leaseExpiresAtMillis()));
    }
    List<io.kvrouter.core.membership.RankRecord> loads = List.of(new io.kvrouter.core.membership.RankRecord(
        answer.selection().rank().workerId(), answer.selection().rank().dpRank(), answer.selection().load(), null));
    io.kvrouter.core.replication.ReplicaDelta delta = new io.kvrouter.core.replication.ReplicaDelta(model, 1, 42,
        System.currentTimeMillis(), null, loads, List.of(), opened, List.of(), bookings, List.of(), List.of());
    return new io.kvrouter.cluster.replication.ReplicaActor.Delta(delta, owner.unsafeUpcast());
  }

  /**
   * The hot messages of a relayed Book as the region's serializers encode them (what crosses Artery for each Book on
   * each path): bytes, and CPU per encode + decode (one thread, after a warm-up).
   */
  private static void serializationCost(Report report, LoopbackRegion region, Placement model, boolean quick) {
    org.apache.pekko.actor.ActorSystem system = org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(
        region.node(0).system());
    org.apache.pekko.serialization.Serialization serialization =
        org.apache.pekko.serialization.SerializationExtension.get(system);
    ModelClient client = region.node(model.owner()).cluster().client(model.model());
    io.kvrouter.core.selection.SelectionRequest request = Requests.of(model.model(), "serialized", 512);
    BookingAnswer answer = BenchCluster.join(client.book(request, CALL));
    BenchCluster.join(client.release(answer.requestId(), answer.attempt(), CALL));
    org.apache.pekko.actor.typed.ActorRef<Object> ref = org.apache.pekko.actor.typed.javadsl.Adapter.toTyped(
        system.deadLetters());
    long nonce = 0x5eed_cafe_f00dL;
    io.kvrouter.cluster.admission.ModelAdmission.Book book = new io.kvrouter.cluster.admission.ModelAdmission.Book(
        request, nonce, 2_000, ref.unsafeUpcast());
    Map<String, Object> messages = new java.util.LinkedHashMap<>();
    messages.put("ask: ShardingEnvelope(Book)", new org.apache.pekko.cluster.sharding.typed.ShardingEnvelope<>(
        model.model(), book));
    messages.put("ask: Booked", new io.kvrouter.cluster.admission.ModelAdmission.Booked(answer));
    messages.put("relay: ShardingEnvelope(RelayBooks of 1)",
        new org.apache.pekko.cluster.sharding.typed.ShardingEnvelope<>(model.model(), relayBooks(request, nonce, ref, 1)));
    // the relay's own messages, each also as Jackson CBOR (their binding until RelaySerializer), side by side
    io.kvrouter.core.selection.SelectionRequest hashed = withHashes(request, 64);
    List<io.kvrouter.cluster.admission.BookRelay.Answer> mutated = List.of(new io.kvrouter.cluster.admission.BookRelay
        .Answer(nonce, null, null, new io.kvrouter.core.admission.MutationResult(true, answer.leaseExpiresAtMillis(),
            answer.loadUpdate(), null)));
    Map<String, Object> relayed = new java.util.LinkedHashMap<>();
    relayed.put("relay direct: RelayBooks of 1", relayBooks(request, nonce, ref, 1));
    relayed.put("relay direct: RelayBooks of 1, 64 block hashes", relayBooks(hashed, nonce, ref, 1));
    relayed.put("relay direct: RelayBooks of 16", relayBooks(request, nonce, ref, 16));
    relayed.put("relay: Answers of 1", new io.kvrouter.cluster.admission.BookRelay.Answers(
        List.of(new io.kvrouter.cluster.admission.BookRelay.Answer(nonce, answer, null, null)), null));
    relayed.put("relay: Answers of 16", new io.kvrouter.cluster.admission.BookRelay.Answers(
        java.util.Collections.nCopies(16, new io.kvrouter.cluster.admission.BookRelay.Answer(nonce, answer, null,
            null)),
        null));
    relayed.put("relay direct: RelayMutations of 1 (a Release)",
        new io.kvrouter.cluster.admission.ModelAdmission.RelayMutations(ref.unsafeUpcast(), List.of(
            new io.kvrouter.cluster.admission.ModelAdmission.RelayedMutation(
                io.kvrouter.cluster.admission.ModelAdmission.MutationKind.RELEASE, answer.requestId(),
                answer.attempt(), nonce)), false));
    relayed.put("relay: Answers of 1 Release", new io.kvrouter.cluster.admission.BookRelay.Answers(mutated, null));
    org.apache.pekko.serialization.Serializer cbor = serialization.findSerializerFor(
        new io.kvrouter.cluster.admission.ModelAdmission.Booked(answer));
    Map<String, org.apache.pekko.serialization.Serializer> forced = new java.util.HashMap<>();
    for (Map.Entry<String, Object> e : relayed.entrySet()) {
      messages.put(e.getKey(), e.getValue());
      messages.put(e.getKey() + ", as CBOR", e.getValue());
      forced.put(e.getKey() + ", as CBOR", cbor);
    }
    int iterations = quick ? 2_000 : 50_000;
    Report.Table table = new Report.Table("message", "serializer", "bytes", "CPU µs per encode + decode");
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    for (Map.Entry<String, Object> e : messages.entrySet()) {
      Object message = e.getValue();
      org.apache.pekko.serialization.Serializer serializer = forced.getOrDefault(e.getKey(),
          serialization.findSerializerFor(message));
      String manifest = org.apache.pekko.serialization.Serializers.manifestFor(serializer, message);
      // as Serialization.serialize does: Jackson resolves actor references through the transport information
      scala.Function0<byte[]> encode = () -> serializer.toBinary(message);
      org.apache.pekko.actor.ExtendedActorSystem extended = (org.apache.pekko.actor.ExtendedActorSystem) system;
      org.apache.pekko.serialization.Serialization$ transport = org.apache.pekko.serialization.Serialization$.MODULE$;
      byte[] bytes = transport.withTransportInformation(extended, encode);
      // warm-up: as many untimed round trips, so that the JIT has compiled this message's own code
      for (int i = 0; i < iterations; i++) {
        serialization.deserialize(transport.withTransportInformation(extended, encode), serializer.identifier(),
            manifest).get();
      }
      long cpu0 = threads.getCurrentThreadCpuTime();
      for (int i = 0; i < iterations; i++) {
        serialization.deserialize(transport.withTransportInformation(extended, encode), serializer.identifier(),
            manifest).get();
      }
      long cpu = threads.getCurrentThreadCpuTime() - cpu0;
      table.row(e.getKey(), serializer.getClass().getSimpleName(), bytes.length, Report.us((double) cpu / iterations));
    }
    report.heading("Serialization of the hot messages");
    report.paragraph(String.format("Each message serialized and deserialized %,d times on one thread by the "
        + "serializer the region binds it to (after %,d untimed round trips); a realistic Book of 512 tokens and "
        + "its answer from the bench model.", iterations, iterations));
    report.table(table);
  }

  /** {@code request} with {@code count} block hashes (a prompt of that many full blocks). */
  private static io.kvrouter.core.selection.SelectionRequest withHashes(io.kvrouter.core.selection.SelectionRequest r,
      int count) {
    return new io.kvrouter.core.selection.SelectionRequest(r.model(), r.requestId(),
        new java.util.Random(11).longs(count).toArray(), r.islTokens(), r.expectedOutputTokens(), r.pinnedWorker(),
        r.pinnedDpRank(), r.allowedWorkers(), r.priority(), r.temperature(), r.overlapCredit(), r.prefillLoadScale());
  }

  private static io.kvrouter.cluster.admission.ModelAdmission.RelayBooks relayBooks(
      io.kvrouter.core.selection.SelectionRequest request, long nonce, org.apache.pekko.actor.typed.ActorRef<Object> ref,
      int books) {
    List<io.kvrouter.cluster.admission.ModelAdmission.RelayedBook> list = new ArrayList<>();
    for (int i = 0; i < books; i++) {
      list.add(new io.kvrouter.cluster.admission.ModelAdmission.RelayedBook(request, nonce + i, 2_000));
    }
    return new io.kvrouter.cluster.admission.ModelAdmission.RelayBooks(ref.unsafeUpcast(), list, false);
  }

  static String loadAverage1() {
    try {
      return java.nio.file.Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+")[0];
    } catch (java.io.IOException e) {
      return "–";
    }
  }

  private static void replicationCost(Report report, LoopbackRegion on, Placement onModel, LoopbackRegion off,
      Placement offModel, Settings s, ExecutorService pool) {
    ModelClient withReplication = on.node(onModel.owner()).cluster().client(onModel.model());
    ModelClient without = off.node(offModel.owner()).cluster().client(offModel.model());
    List<SideBySide> rows = sideBySide("replication off vs on", without, without, withReplication,
        withReplication, s, pool);
    report.heading("What replication costs the owner");
    report.paragraph(String.format("Two regions of three nodes in this JVM, one with `kvrouter.replication.enabled "
            + "= off`, one with it on; Books alone through each owner's own facade, after %,d ms of untimed warm-up "
            + "windows through each, in alternating %,d ms windows (%d rounds, median round; each window's bookings "
            + "released after it, untimed). Target: on ≥ 0.7× off.", s.warmupMillis(), s.windowMillis(),
        s.rounds()));
    Report.Table table = new Report.Table("callers", "off Books/s", "off CPU µs/Book", "on Books/s",
        "on CPU µs/Book", "on ÷ off", "target ≥ 0.7×", "failed off; on", "range off; on");
    for (SideBySide r : rows) {
      table.row(r.callers(), Report.rate(r.first().callsPerSecond()), Report.us(r.first().cpuNanosPerCall()),
          Report.rate(r.second().callsPerSecond()), Report.us(r.second().cpuNanosPerCall()), Report.ratio(r.ratio()),
          Report.verdict(r.ratio() >= 0.7), r.first().failures() + "; " + r.second().failures(),
          r.firstRange() + "; " + r.secondRange());
    }
    report.table(table);
  }

  // ------------------------------------------------------------------------------------------------- membership

  /** Polls every node's membership every 5 ms: members seen unreachable, members downed or removed. */
  static final class MembershipWatch {
    private final List<LoopbackRegion> regions = new ArrayList<>();
    private final Map<String, Boolean> unreachableNow = new ConcurrentHashMap<>();
    private final AtomicLong unreachable = new AtomicLong();
    private final java.util.Set<String> downed = ConcurrentHashMap.newKeySet();
    private final AtomicLong removed = new AtomicLong();
    private final Map<String, Integer> expected = new ConcurrentHashMap<>();
    private volatile boolean stopping;
    private final Thread thread = new Thread(this::loop, "membership-watch");

    MembershipWatch(LoopbackRegion region) {
      regions.add(region);
      thread.setDaemon(true);
    }

    synchronized void add(LoopbackRegion region) {
      regions.add(region);
    }

    void start() {
      thread.start();
    }

    void stop() {
      stopping = true;
      try {
        thread.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    long unreachableObservations() {
      return unreachable.get();
    }

    /** Distinct (observer, member) pairs seen Down or Removed, plus members that vanished from a view. */
    long downedOrRemoved() {
      return downed.size() + removed.get();
    }

    private void loop() {
      while (!stopping) {
        List<LoopbackRegion> now;
        synchronized (this) {
          now = List.copyOf(regions);
        }
        for (LoopbackRegion region : now) {
          for (int i = 0; i < region.size(); i++) {
            Cluster cluster = Cluster.get(region.node(i).system());
            if (cluster.isTerminated()) {
              continue;
            }
            String observer = region.address(i).toString();
            int members = 0;
            for (Member m : cluster.state().getMembers()) {
              members++;
              String key = observer + "->" + m.address();
              boolean isUnreachable = cluster.state().getUnreachable().contains(m);
              if (isUnreachable && unreachableNow.put(key, true) == null) {
                unreachable.incrementAndGet();
              } else if (!isUnreachable) {
                unreachableNow.remove(key);
              }
              if (m.status() == MemberStatus.down() || m.status() == MemberStatus.removed()) {
                downed.add(key);
              }
            }
            int before = expected.merge(observer, members, Math::max);
            if (members < before) {
              removed.addAndGet(before - members);
              expected.put(observer, members);
            }
          }
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      }
    }
  }

  // --------------------------------------------------------------------------------------------------- failover

  /** One failover case's figures; times in ms from the kill, -1 when it did not happen. */
  record FailoverRow(String owner, long stoppedMs, long unreachableMs, long downMs, long removedMs, long registerMs,
      long firstBookMs, long booksOk, long replays, Map<String, Long> bookErrors, int held, int heldLive, int heldReleased,
      long cycleAcrossKill, long cycleReleasedApplied, long cycleReleasedNotApplied, long cycleUnanswered,
      int liveAtEnd) {}

  private static void failover(Report report, Settings s, ExecutorService pool) throws Exception {
    List<FailoverRow> rows = new ArrayList<>();
    for (boolean ownerOldest : new boolean[] {true, false}) {
      try (LoopbackRegion region = LoopbackRegion.start(3, replication(true))) {
        rows.add(failoverCase(region, ownerOldest, s, pool));
      }
    }
    report.heading("Failover");
    report.paragraph(String.format("A fresh region per case. The model's actor is placed on the oldest node (it "
            + "also runs the shard coordinator) or on another one by registering it through that node. Before the "
            + "kill: %d *held* bookings made through the two other nodes and left live, then %d Book → hold %d ms → "
            + "Release loops per surviving node (each Book of a fresh request id, 2 s deadline, 10 ms pause after "
            + "an error), every worker reporting its load every 200 ms through a surviving node, and a Register "
            + "of an existing worker of a second model hosted on the same node through a survivor every 100 ms "
            + "(*shard served again*: answered once the dead node's shards start elsewhere; the measured model "
            + "gets nothing but the load's calls). Kill = the owner's actor system stops without leaving the cluster or handing off its "
            + "shards (`LoopbackRegion.crash`): its peers see it go silent, as after kill -9. Times are from the "
            + "kill: its actor system stopped; unreachable, downed by the resolver, removed as a survivor sees them; "
            + "the first Book sent after the node had stopped that was admitted (a replay does not count). A Book "
            + "that timed out may have booked with its answer lost: the loop replays it (same request id, "
            + "*replays*) until answered, then releases what it got. Then %,d ms more load, the load stops, the "
            + "held bookings are looked up "
            + "(GetModelState through a survivor: live after / acknowledged) and released through the survivors "
            + "(applied). *Cycle across the kill*: loop bookings acknowledged before the kill whose Release "
            + "(retried every 100 ms until answered) was answered after it: applied (recovered), not applied (lost, "
            + "or released by the old actor with the answer lost in the crash), unanswered; they were acknowledged "
            + "within one hold time of the kill, so some fall inside the replication interval. Live bookings at "
            + "the end: through a survivor after every release; besides leaks they count bookings whose Release "
            + "the old actor applied within the replication interval before the crash (the recovered ledger holds "
            + "them until their lease ends). Target: first admitted Book ≤ 10 s, no held booking lost.",
        s.heldBookings(), s.loadCallers(), s.holdMillis(), s.afterRecoveryMillis()));
    Report.Table table = new Report.Table("owner", "stopped (ms)", "unreachable (ms)", "downed (ms)", "removed (ms)",
        "shard served again (ms)", "first admitted Book (ms)", "target ≤ 10 s", "Books OK", "replays", "Book errors",
        "held live after / acknowledged", "held released (applied)", "cycle across the kill: applied / not / "
        + "unanswered", "live bookings at the end");
    for (FailoverRow r : rows) {
      table.row(r.owner(), ms(r.stoppedMs()), ms(r.unreachableMs()), ms(r.downMs()), ms(r.removedMs()),
          ms(r.registerMs()), ms(r.firstBookMs()),
          r.firstBookMs() < 0 ? "**missed**" : Report.verdict(r.firstBookMs() <= 10_000), r.booksOk(), r.replays(),
          r.bookErrors().isEmpty() ? "none" : r.bookErrors().toString(),
          r.heldLive() + " / " + r.held(), r.heldReleased(),
          r.cycleReleasedApplied() + " / " + r.cycleReleasedNotApplied() + " / " + r.cycleUnanswered(),
          r.liveAtEnd());
    }
    report.table(table);
  }

  private static String ms(long millis) {
    return millis < 0 ? "–" : String.format(java.util.Locale.ROOT, "%,d", millis);
  }

  /** A booking the load made: when it was acknowledged, and what its Release answered. */
  private record Acked(String requestId, long attempt, long ackedAtNanos) {}

  private static FailoverRow failoverCase(LoopbackRegion region, boolean ownerOldest, Settings s,
      ExecutorService pool) throws Exception {
    int oldest = region.oldest();
    int wanted = ownerOldest ? oldest : other(region, oldest);
    Placement found = null;
    for (int attempt = 0; attempt < 10 && found == null; attempt++) {
      Placement p = place(region, MODEL + "-failover-" + (ownerOldest ? "oldest" : "younger") + "-" + attempt,
          s.workers(), wanted);
      found = p.owner() == wanted ? p : null;
    }
    if (found == null) {
      throw new IllegalStateException("could not place a model on node " + (wanted + 1));
    }
    Placement placement = found;
    String model = placement.model();
    int victim = placement.owner();
    // a second model on the same node, whose Register tells when the node's shards are served again without
    // sending the measured model anything but the load's calls
    Placement probe = null;
    for (int attempt = 0; attempt < 10 && probe == null; attempt++) {
      Placement p = place(region, MODEL + "-probe-" + (ownerOldest ? "oldest" : "younger") + "-" + attempt, 1,
          victim);
      probe = p.owner() == victim ? p : null;
    }
    if (probe == null) {
      throw new IllegalStateException("could not place the probe model on node " + (victim + 1));
    }
    int[] survivors = new int[2];
    for (int i = 0, k = 0; i < region.size(); i++) {
      if (i != victim) {
        survivors[k++] = i;
      }
    }
    String label = ownerOldest ? "oldest (node " + (victim + 1) + ")" : "not oldest (node " + (victim + 1) + ")";
    Progress.line("cluster", "failover, owner %s", label);
    java.util.function.IntFunction<ModelClient> via = i -> region.node(survivors[i % 2]).cluster().client(model);

    // held bookings, acknowledged well before the kill
    List<Acked> held = new ArrayList<>();
    Map<String, Integer> heldFailures = new TreeMap<>();
    for (int i = 0; i < s.heldBookings(); i++) {
      try {
        BookingAnswer a = via.apply(i).book(Requests.of(model, "held-" + i, 512), CALL).get(5, TimeUnit.SECONDS);
        held.add(new Acked(a.requestId(), a.attempt(), System.nanoTime()));
      } catch (ExecutionException | TimeoutException e) {
        heldFailures.merge(describe(e), 1, Integer::sum);
      }
    }
    if (!heldFailures.isEmpty()) {
      Progress.line("cluster", "held Books through the survivors that failed: %s", heldFailures);
    }

    ScheduledExecutorService timers = Executors.newScheduledThreadPool(2, r -> {
      Thread t = new Thread(r, "failover-timers");
      t.setDaemon(true);
      return t;
    });
    FailoverLoad load = new FailoverLoad(timers, pool, s.holdMillis(), s.failoverMaxMillis());
    AtomicLong registerAt = new AtomicLong(-1);
    Placement probeModel = probe;
    try {
      // workers report their load through a survivor (a recovering actor admits only to ranks that reported)
      timers.scheduleAtFixedRate(() -> {
        for (Rank rank : placement.ranks()) {
          via.apply(0).reportLoad(rank.workerId(), List.of(new RankReport(rank.dpRank(), 0, 0, 0)), CALL);
        }
      }, 0, 200, TimeUnit.MILLISECONDS);
      // the probe model's Register through a survivor: answered once the dead node's shards are served again
      timers.scheduleWithFixedDelay(() -> {
        if (registerAt.get() >= 0 || System.nanoTime() < load.killAt.get()) {
          return;
        }
        long sent = System.nanoTime();
        try {
          region.node(survivors[0]).cluster().client(probeModel.model())
              .register(Fixtures.worker(Fixtures.workerId(0)), Duration.ofSeconds(1)).toCompletableFuture()
              .get(2, TimeUnit.SECONDS);
          registerAt.compareAndSet(-1, sent);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
          // not served yet
        }
      }, 0, 100, TimeUnit.MILLISECONDS);
      for (int c = 0; c < 2 * s.loadCallers(); c++) {
        int caller = c;
        load.start(() -> via.apply(caller));
      }
      MembershipTimes times = new MembershipTimes(region.node(survivors[0]), region.address(victim));
      LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
      long kill = System.nanoTime();
      load.killAt.set(kill);
      region.crash(victim);
      region.node(victim).system().getWhenTerminated().thenRun(() -> load.deadAt.set(System.nanoTime()));
      long deadline = kill + TimeUnit.MILLISECONDS.toNanos(s.failoverMaxMillis());
      while (load.firstBookAt.get() < 0 && System.nanoTime() < deadline) {
        times.poll();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      }
      long afterEnd = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(s.afterRecoveryMillis());
      while (System.nanoTime() < afterEnd) {
        times.poll();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      }
      load.running.set(false);
      // releases retry until answered or the give-up time: wait for every loop to end
      long drain = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(s.failoverMaxMillis()) + 15_000_000_000L;
      while (load.loops.get() > 0 && System.nanoTime() < drain) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      }
      timers.shutdownNow();

      int heldLive = 0;
      int liveAtEnd = -1;
      try {
        Map<String, Long> live = new HashMap<>();
        liveBookings(via.apply(0)).forEach(b -> live.put(b.requestId(), b.attempt()));
        for (Acked h : held) {
          if (Long.valueOf(h.attempt()).equals(live.get(h.requestId()))) {
            heldLive++;
          }
        }
      } catch (ExecutionException | TimeoutException e) {
        Progress.line("cluster", "state after failover: %s", describe(e));
      }
      int heldReleased = 0;
      for (int i = 0; i < held.size(); i++) {
        try {
          MutationResult r = via.apply(i).release(held.get(i).requestId(), held.get(i).attempt(), CALL)
              .toCompletableFuture().get(5, TimeUnit.SECONDS);
          heldReleased += r.applied() ? 1 : 0;
        } catch (ExecutionException | TimeoutException e) {
          // counted as not released
        }
      }
      try {
        liveAtEnd = liveBookings(via.apply(1)).size();
      } catch (ExecutionException | TimeoutException e) {
        Progress.line("cluster", "state at the end: %s", describe(e));
      }
      long dead = load.deadAt.get();
      FailoverRow row = new FailoverRow(label,
          dead == Long.MAX_VALUE ? -1 : TimeUnit.NANOSECONDS.toMillis(dead - kill),
          times.sinceKill(times.unreachable, kill),
          times.sinceKill(times.down, kill), times.sinceKill(times.removed, kill),
          registerAt.get() < 0 ? -1 : TimeUnit.NANOSECONDS.toMillis(registerAt.get() - kill),
          load.firstBookAt.get() < 0 ? -1 : TimeUnit.NANOSECONDS.toMillis(load.firstBookAt.get() - kill),
          load.booksOk.get(), load.replays.get(), load.errors(), held.size(), heldLive, heldReleased, load.acrossKill.get(),
          load.releasedApplied.get(), load.releasedNotApplied.get(), load.releaseUnanswered.get(), liveAtEnd);
      Progress.line("cluster", "failover, owner %s: %s", label, row);
      return row;
    } finally {
      load.running.set(false);
      timers.shutdownNow();
    }
  }

  /** The model's live bookings as GetModelState answers them through {@code client}'s node. */
  private static List<io.kvrouter.core.admission.ModelSnapshot.BookingSnapshot> liveBookings(ModelClient client)
      throws InterruptedException, ExecutionException, TimeoutException {
    return client.state(CALL).toCompletableFuture().get(5, TimeUnit.SECONDS).snapshot().bookings();
  }

  /** When node {@code observer} saw {@code victim} unreachable, down, removed (nanoTime; 0 = not yet). */
  private static final class MembershipTimes {
    private final Cluster cluster;
    private final Address victim;
    long unreachable;
    long down;
    long removed;

    MembershipTimes(RouterNode observer, Address victim) {
      this.cluster = Cluster.get(observer.system());
      this.victim = victim;
    }

    void poll() {
      long now = System.nanoTime();
      Member member = null;
      for (Member m : cluster.state().getMembers()) {
        if (m.address().equals(victim)) {
          member = m;
        }
      }
      if (member == null) {
        removed = removed == 0 ? now : removed;
        return;
      }
      if (unreachable == 0 && cluster.state().getUnreachable().contains(member)) {
        unreachable = now;
      }
      if (down == 0 && member.status() == MemberStatus.down()) {
        down = now;
      }
    }

    long sinceKill(long at, long kill) {
      return at == 0 ? -1 : TimeUnit.NANOSECONDS.toMillis(at - kill);
    }
  }

  /** What the Book → hold → Release loops of a failover case share and count. */
  private static final class FailoverLoad {
    final ScheduledExecutorService timers;
    final ExecutorService pool;
    final long holdMillis;
    final long giveUpNanos;
    final AtomicLong ids = new AtomicLong();
    final java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
    final AtomicInteger loops = new AtomicInteger();
    final AtomicLong killAt = new AtomicLong(Long.MAX_VALUE);
    /** When the killed node's actor system had stopped: Books sent after it cannot reach the old actor. */
    final AtomicLong deadAt = new AtomicLong(Long.MAX_VALUE);
    final AtomicLong replays = new AtomicLong();
    final AtomicLong firstBookAt = new AtomicLong(-1);
    final AtomicLong booksOk = new AtomicLong();
    final Map<String, Long> errors = new TreeMap<>();
    final AtomicLong acrossKill = new AtomicLong();
    final AtomicLong releasedApplied = new AtomicLong();
    final AtomicLong releasedNotApplied = new AtomicLong();
    final AtomicLong releaseUnanswered = new AtomicLong();

    FailoverLoad(ScheduledExecutorService timers, ExecutorService pool, long holdMillis, long giveUpMillis) {
      this.timers = timers;
      this.pool = pool;
      this.holdMillis = holdMillis;
      this.giveUpNanos = TimeUnit.MILLISECONDS.toNanos(giveUpMillis);
    }

    /** Starts one loop; {@code client} is looked up per call (a facade is valid for the life of one actor). */
    void start(java.util.function.Supplier<ModelClient> client) {
      loops.incrementAndGet();
      book(client);
    }

    synchronized Map<String, Long> errors() {
      return new TreeMap<>(errors);
    }

    private synchronized void error(Throwable failure) {
      errors.merge(describe(failure), 1L, Long::sum);
    }

    /**
     * Books a fresh request id; when admitted, holds it, then releases it (retried until answered: Release is
     * idempotent) and books again; after an error books again 10 ms later. Stops when {@code running} is off.
     */
    private void book(java.util.function.Supplier<ModelClient> client) {
      if (!running.get()) {
        loops.decrementAndGet();
        return;
      }
      book(client, "cycle-" + ids.incrementAndGet(), 0);
    }

    /**
     * One Book of {@code id}; a Book whose answer may have been lost (a timeout: it may have booked) is replayed
     * with the same request id, as a client does to reclaim it, until answered or the give-up time.
     */
    private void book(java.util.function.Supplier<ModelClient> client, String id, long giveUpAt) {
      long sent = System.nanoTime();
      ModelClient facade = client.get();
      facade.book(Requests.of(facade.model(), id, 512), CALL).whenCompleteAsync((answer, failure) -> {
        long now = System.nanoTime();
        if (failure != null) {
          error(failure);
          long giveUp = giveUpAt == 0 ? now + giveUpNanos : giveUpAt;
          if (mayHaveBooked(failure) && now < giveUp) {
            replays.incrementAndGet();
            timers.schedule(() -> book(client, id, giveUp), 10, TimeUnit.MILLISECONDS);
          } else {
            timers.schedule(() -> book(client), 10, TimeUnit.MILLISECONDS);
          }
          return;
        }
        booksOk.incrementAndGet();
        if (sent > deadAt.get() && !answer.replay()) {
          firstBookAt.compareAndSet(-1, now);
        }
        Acked acked = new Acked(answer.requestId(), answer.attempt(), now);
        timers.schedule(() -> release(client, acked, now + giveUpNanos), holdMillis, TimeUnit.MILLISECONDS);
      }, pool);
    }

    /** A Book that failed this way may still have booked (its answer was lost): the client replays it. */
    private static boolean mayHaveBooked(Throwable failure) {
      String reason = describe(failure);
      return reason.equals("ADMISSION_TIMEOUT") || reason.endsWith("TimeoutException");
    }

    private void release(java.util.function.Supplier<ModelClient> client, Acked acked, long giveUpAt) {
      client.get().release(acked.requestId(), acked.attempt(), CALL).whenCompleteAsync((result, failure) -> {
        long now = System.nanoTime();
        if (failure != null && now < giveUpAt) {
          timers.schedule(() -> release(client, acked, giveUpAt), 100, TimeUnit.MILLISECONDS);
          return;
        }
        if (acked.ackedAtNanos() < killAt.get() && now > killAt.get()) {
          acrossKill.incrementAndGet();
          if (failure != null) {
            releaseUnanswered.incrementAndGet();
          } else if (result.applied()) {
            releasedApplied.incrementAndGet();
          } else {
            releasedNotApplied.incrementAndGet();
          }
        }
        book(client);
      }, pool);
    }
  }

  /** A failure's reason: the router's rejection reason, or the exception's class. */
  static String describe(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof RoutingException routing) {
      return routing.error().reason();
    }
    return t.getClass().getSimpleName();
  }
}
