package io.kvrouter.bench;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.bench.transport.ProcStat;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.server.RouterNode;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Books sent to the model's owner node vs relayed between nodes, over gRPC as clients send them:
 *
 * <ul>
 *   <li>{@code bench owner}: one region of three nodes in this JVM ({@link LoopbackRegion}); one client spreads
 *       Book + Release round-robin over the three nodes' gRPC endpoints as a load balancer would (relay path), the
 *       same client sending Books to the owner the answers name (owner-direct, as the Python client does), against
 *       the same client on the owner alone; and the front's choice, in-process on a non-owner node: the node's
 *       relay ({@link ModelClient}) or gRPC to the owner.
 *   <li>{@code bench owner-regions}: two regions ({@link TwoRegions}): a global Book + Release through us's node
 *       (the cross-region sharding proxy), against the same pairs sent to eu's owner node (the endpoint us's global
 *       Select names) and against regional pairs on eu's node.
 * </ul>
 */
final class OwnerBench {
  private static final String MODEL = Fixtures.MODEL;
  private static final int BLOCKS = 64;
  private static final long DEADLINE_MS = 10_000;
  private static final long TICKS_PER_SECOND = ProcStat.clockTicksPerSecond();
  /** The longest slice of one path's measurement; a round alternates the paths' slices. */
  private static final Duration SLICE = Duration.ofSeconds(1);
  private static final String SIDE_BY_SIDE = "side by side: each round alternates the paths in slices of at most "
      + SLICE.toMillis() + " ms (the order turns with each slice and round), so the host's drift and the JIT weigh on "
      + "every path alike; a path's figures sum its slices, the heap collected before each round.";
  private static final String CPU_NOTE = " CPU is this process's CPU time (nodes and client together) per pair; in "
      + "parentheses the part of it the JIT compiler threads spent (from /proc).";

  private OwnerBench() {}

  /** One Book + Release pair of request {@code id}. */
  private interface Lane {
    CompletionStage<?> pair(String id);
  }

  /**
   * Pairs per second and process CPU per pair of one measurement, and the part of that CPU the JIT compiler threads
   * spent (three nodes' worth of code paths compile for long after the warm-up on 2 CPUs).
   */
  private record Rate(double pairsPerSecond, double cpuMicrosPerPair, double jitMicrosPerPair) {}

  /**
   * Untimed closed loops through each path before its first measurement: three nodes' code paths take about this long
   * to compile on 2 CPUs (the relay's longest).
   */
  private static Duration warmUp(boolean quick) {
    return quick ? Duration.ofMillis(300) : Duration.ofSeconds(20);
  }

  // ---- bench owner

  static List<Path> runRegion(Path out, boolean quick) throws Exception {
    Duration duration = quick ? Duration.ofMillis(500) : Duration.ofSeconds(5);
    Duration warmUp = warmUp(quick);
    int rounds = quick ? 1 : 2;
    Report report = new Report("Owner-direct Books: a region of three nodes behind a round-robin client");
    List<ManagedChannel> channels = new ArrayList<>();
    try (LoopbackRegion region = LoopbackRegion.start(3, "")) {
      register(region.node(0), 4);
      int owner = awaitOwner(region);
      int nonOwner = (owner + 1) % region.size();
      String[] endpoints = new String[region.size()];
      for (int i = 0; i < region.size(); i++) {
        channels.add(channel(region.node(i).grpcPort()));
        endpoints[i] = "127.0.0.1:" + region.node(i).grpcPort();
      }
      Map<String, ManagedChannel> byEndpoint = new ConcurrentHashMap<>();
      for (int i = 0; i < endpoints.length; i++) {
        byEndpoint.put(endpoints[i], channels.get(i));
      }
      long[] hashes = Fixtures.chain(new SplittableRandom(5), BLOCKS);
      AtomicLong next = new AtomicLong();
      Function<Integer, ManagedChannel> roundRobin = ignored ->
          channels.get((int) (next.getAndIncrement() % channels.size()));

      Lane ownerAlone = id -> grpcPair(channels.get(owner), channels.get(owner),
          request(hashes, id, Scope.SCOPE_REGION), "");
      Lane relayed = id -> grpcPair(roundRobin.apply(0), roundRobin.apply(0), request(hashes, id, Scope.SCOPE_REGION),
          "");
      OwnerDirectClient direct = new OwnerDirectClient(byEndpoint, () -> roundRobin.apply(0));
      Lane ownerDirect = id -> direct.pair(request(hashes, id, Scope.SCOPE_REGION));

      ModelClient relay = region.node(nonOwner).cluster().client(MODEL);
      ModelClient local = region.node(owner).cluster().client(MODEL);
      Lane frontRelay = id -> modelClientPair(relay, hashes, id);
      Lane frontLocal = id -> modelClientPair(local, hashes, id);
      Lane frontGrpc = id -> grpcPair(channels.get(owner), channels.get(owner),
          request(hashes, id, Scope.SCOPE_REGION), "");

      report.paragraph("One region of three router nodes in this JVM (loopback, every message serialized across "
          + "Artery as between hosts, replication on with wait-for-majority), sharing this host's CPUs with the "
          + "client; one model with 4 idle workers (kv policy) whose admission actor runs on node " + (owner + 1)
          + ", 64-block requests. Each caller runs a closed loop of Book then Release over gRPC (grpc-java, one "
          + "HTTP/2 connection per node), " + duration.toMillis() + " ms per path and round after " + warmUp.toMillis()
          + " ms of warm-up per path, " + rounds + " rounds; " + SIDE_BY_SIDE + CPU_NOTE);
      Report.Table table = new Report.Table("path", "callers", "round", "Book+Release pairs/s", "CPU µs/pair",
          "pairs/s relative to the owner alone", "CPU/pair relative to the owner alone");
      for (int callers : new int[] {16, 64}) {
        for (Lane lane : List.of(ownerAlone, relayed, ownerDirect)) {
          window(lane, callers, warmUp);
        }
        for (int round = 1; round <= rounds; round++) {
          Rate[] rates = sideBySide(new Lane[] {ownerAlone, relayed, ownerDirect},
              new String[] {"owner", "relay", "owner-direct"}, callers, duration, round);
          Rate alone = rates[0];
          table.row("owner alone: every call to the owner node", callers, round, Report.rate(alone.pairsPerSecond()),
              cpu(alone), "1.00×", "1.00×");
          table.row("round robin over 3 nodes, relay path (Book and Release each to the next node)", callers, round,
              Report.rate(rates[1].pairsPerSecond()), cpu(rates[1]),
              Report.ratio(rates[1].pairsPerSecond() / alone.pairsPerSecond()), cpuRatio(rates[1], alone));
          table.row("round robin over 3 nodes, owner-direct (Books to the owner the answers name, Release where "
              + "booked)", callers, round, Report.rate(rates[2].pairsPerSecond()), cpu(rates[2]),
              Report.ratio(rates[2].pairsPerSecond() / alone.pairsPerSecond()), cpuRatio(rates[2], alone));
        }
      }
      report.heading("A load balancer's round robin: relay vs owner-direct");
      report.paragraph("Targets (issue 25): round robin ≥ 0.6× the owner alone through the relay, ≥ 0.95× with "
          + "Books sent to the owner. `owner-direct` is the client's rule (the Python client's default): a Book "
          + "goes to the round-robin node until an answer names the owner (Selection.owner_endpoint), then to the "
          + "owner; its Release goes to the node that booked it. The first Books of a run learn the owner, so "
          + "in steady state every Book reaches the owner without a relay hop.");
      report.table(table);

      Report.Table front = new Report.Table("path (in-process, as the front books)", "callers", "round",
          "Book+Release pairs/s", "CPU µs/pair", "pairs/s relative to the local actor",
          "CPU/pair relative to the local actor");
      for (Lane lane : List.of(frontLocal, frontRelay, frontGrpc)) {
        window(lane, 16, warmUp);
      }
      for (int round = 1; round <= rounds; round++) {
        Rate[] rates = sideBySide(new Lane[] {frontLocal, frontRelay, frontGrpc},
            new String[] {"front-local", "front-relay", "front-grpc"}, 16, duration, round);
        front.row("ModelClient on the owner node (local actor; a front on the owner)", 16, round,
            Report.rate(rates[0].pairsPerSecond()), cpu(rates[0]), "1.00×", "1.00×");
        front.row("ModelClient on a non-owner node (the node's relay, what the front does)", 16, round,
            Report.rate(rates[1].pairsPerSecond()), cpu(rates[1]),
            Report.ratio(rates[1].pairsPerSecond() / rates[0].pairsPerSecond()), cpuRatio(rates[1], rates[0]));
        front.row("gRPC from a non-owner node to the owner (owner-direct front)", 16, round,
            Report.rate(rates[2].pairsPerSecond()), cpu(rates[2]),
            Report.ratio(rates[2].pairsPerSecond() / rates[0].pairsPerSecond()), cpuRatio(rates[2], rates[0]));
      }
      report.heading("The front's Books: the node's relay or gRPC to the owner");
      report.paragraph("The front (router-front) runs in-process on a node and books through the node's "
          + "`ModelClient`: on the owner an ask on the local actor, elsewhere the relay through sharding. The "
          + "alternative is a gRPC Book to the owner node the node's answers name. 16 callers, each a closed loop "
          + "of Book + Release, the same cluster as above.");
      report.table(front);
    } finally {
      channels.forEach(ManagedChannel::shutdownNow);
    }
    return List.of(report.write(out, "owner.md"));
  }

  /** Registers {@code workers} workers of the node's region through it and waits until they are in its view. */
  private static void register(RouterNode node, int workers) {
    String region = node.cluster().region();
    for (int i = 0; i < workers; i++) {
      String id = region + "-w" + i;
      BenchCluster.join(node.cluster().client(MODEL).register(new WorkerConfig(id, 0, 1, 8192, 100_000,
          Fixtures.BLOCK_SIZE, "http://" + id + ":8000", region, WorkerRole.AGGREGATED), Duration.ofSeconds(5)));
    }
  }

  /** Waits until every node names the model's owner (from its summaries) and returns the owner's index. */
  private static int awaitOwner(LoopbackRegion region) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      int owner = region.hostOf(MODEL);
      if (owner >= 0) {
        String endpoint = "127.0.0.1:" + region.node(owner).grpcPort();
        boolean named = true;
        for (int i = 0; i < region.size(); i++) {
          var view = region.node(i).cluster().view(MODEL);
          named &= view != null && !view.isEmpty()
              && endpoint.equals(region.node(i).cluster().ownerEndpoint(MODEL, region.node(i).cluster().region()));
        }
        if (named) {
          return owner;
        }
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the nodes did not all name the owner of " + MODEL + " within 60 s");
      }
      java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
  }

  // ---- bench owner-regions

  static List<Path> runRegions(Path out, boolean quick) throws Exception {
    Duration duration = quick ? Duration.ofMillis(500) : Duration.ofSeconds(5);
    Duration warmUp = warmUp(quick);
    int rounds = quick ? 1 : 2;
    int callers = 16;
    Report report = new Report("Owner-direct Books across regions: global Book + Release");
    List<ManagedChannel> channels = new ArrayList<>();
    try (TwoRegions regions = TwoRegions.start()) {
      register(regions.eu, 4);
      regions.awaitPool(regions.us, MODEL, "eu");
      regions.await("us names eu's owner", () -> !regions.us.cluster().ownerEndpoint(MODEL, "eu").isEmpty());
      ManagedChannel us = channel(regions.us.grpcPort());
      ManagedChannel eu = channel(regions.eu.grpcPort());
      channels.add(us);
      channels.add(eu);
      long[] hashes = Fixtures.chain(new SplittableRandom(7), BLOCKS);
      // what a client does: one global Select on its node names the region's owner, later Books go there
      String named = RouterGrpc.newBlockingStub(us).withDeadlineAfter(DEADLINE_MS, TimeUnit.MILLISECONDS)
          .select(request(hashes, "", Scope.SCOPE_GLOBAL)).getOwnerEndpoint();
      if (!named.equals("127.0.0.1:" + regions.eu.grpcPort())) {
        throw new IllegalStateException("us's global Select named " + named + ", not eu's node");
      }
      ManagedChannel atOwner = channel(Integer.parseInt(named.substring(named.lastIndexOf(':') + 1)));
      channels.add(atOwner);

      Lane local = id -> grpcPair(eu, eu, request(hashes, id, Scope.SCOPE_REGION), "");
      Lane proxied = id -> grpcPair(us, us, request(hashes, id, Scope.SCOPE_GLOBAL), "eu");
      Lane ownerDirect = id -> grpcPair(atOwner, atOwner, request(hashes, id, Scope.SCOPE_GLOBAL), "eu");
      ModelClient fromUs = regions.us.cluster().client(MODEL, "eu");
      ModelClient onEu = regions.eu.cluster().client(MODEL);
      Lane proxiedInProcess = id -> modelClientPair(fromUs, hashes, id);
      Lane localInProcess = id -> modelClientPair(onEu, hashes, id);

      Lane[] lanes = {local, proxied, ownerDirect, localInProcess, proxiedInProcess};
      String[] names = {"local", "proxy", "owner-direct", "local-in-process", "proxy-in-process"};
      for (Lane lane : lanes) {
        window(lane, callers, warmUp);
      }
      Report.Table table = new Report.Table("path", "round", "Book+Release pairs/s", "CPU µs/pair",
          "pairs/s relative to local", "CPU/pair relative to local");
      for (int round = 1; round <= rounds; round++) {
        Rate[] r = sideBySide(lanes, names, callers, duration, round);
        table.row("gRPC: regional Book + Release on eu's node (local)", round, Report.rate(r[0].pairsPerSecond()),
            cpu(r[0]), "1.00×", "1.00×");
        table.row("gRPC: global Book from us's node through the eu proxy, Release through us (relay)", round,
            Report.rate(r[1].pairsPerSecond()), cpu(r[1]), Report.ratio(r[1].pairsPerSecond() / r[0].pairsPerSecond()),
            cpuRatio(r[1], r[0]));
        table.row("gRPC: global Book + Release sent to eu's owner node, named by us's global Select "
            + "(owner-direct)", round, Report.rate(r[2].pairsPerSecond()), cpu(r[2]),
            Report.ratio(r[2].pairsPerSecond() / r[0].pairsPerSecond()), cpuRatio(r[2], r[0]));
        table.row("in-process: ModelClient on eu's node (local actor)", round, Report.rate(r[3].pairsPerSecond()),
            cpu(r[3]), "(in-process reference)", "");
        table.row("in-process: ModelClient of region eu on us's node (the proxy)", round,
            Report.rate(r[4].pairsPerSecond()), cpu(r[4]), Report.ratio(r[4].pairsPerSecond() / r[3].pairsPerSecond())
                + " of in-process local", cpuRatio(r[4], r[3]) + " of in-process local");
      }
      report.paragraph("Two regions `us` and `eu` of one node each in this JVM, the model's 4 workers in eu only "
          + "(kv policy), 64-block requests; " + callers + " callers, each a closed loop of Book then Release, "
          + duration.toMillis() + " ms per path and round after " + warmUp.toMillis() + " ms of warm-up per path, "
          + rounds + " rounds; " + SIDE_BY_SIDE + " Target "
          + "(issue 25): global Book + Release ≥ 0.25× local. `owner-direct`: a client of us's node asks a global "
          + "Select once, which names eu's owner node (Selection.owner_endpoint, from eu's pool summaries), and "
          + "sends its global Books and their Releases there: eu's node then books in its own region without a "
          + "cross-region hop. The relay rows go through the sharding proxy of data center eu (Artery; the relay's "
          + "messages as protobuf, `RelaySerializer`)."
          + CPU_NOTE);
      report.table(table);
    } finally {
      channels.forEach(ManagedChannel::shutdownNow);
    }
    return List.of(report.write(out, "owner-regions.md"));
  }

  // ---- clients

  /**
   * The client rule of owner-direct (the Python client's): a Book goes to the owner the last answer named, else to
   * the next node of the round robin; its Release goes to the node that booked it.
   */
  private static final class OwnerDirectClient {
    private final Map<String, ManagedChannel> byEndpoint;
    private final java.util.function.Supplier<ManagedChannel> roundRobin;
    private volatile ManagedChannel owner;

    OwnerDirectClient(Map<String, ManagedChannel> byEndpoint, java.util.function.Supplier<ManagedChannel> roundRobin) {
      this.byEndpoint = byEndpoint;
      this.roundRobin = roundRobin;
    }

    CompletionStage<?> pair(RouteRequest request) {
      ManagedChannel to = owner != null ? owner : roundRobin.get();
      return call(RouterGrpc.newFutureStub(to).withDeadlineAfter(DEADLINE_MS, TimeUnit.MILLISECONDS).book(request))
          .thenCompose(booking -> {
            ManagedChannel named = byEndpoint.get(booking.getSelection().getOwnerEndpoint());
            if (named != null) {
              owner = named;
            }
            return call(RouterGrpc.newFutureStub(to).withDeadlineAfter(DEADLINE_MS, TimeUnit.MILLISECONDS)
                .release(ref(request.getModel(), booking, "")));
          });
    }
  }

  private static ManagedChannel channel(int port) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().directExecutor().build();
  }

  private static RouteRequest request(long[] hashes, String id, Scope scope) {
    RouteRequest.Builder out = RouteRequest.newBuilder().setModel(MODEL).setRequestId(id)
        .setIslTokens(hashes.length * Fixtures.BLOCK_SIZE).setScope(scope);
    for (long h : hashes) {
      out.addBlockHashes(h);
    }
    return out.build();
  }

  private static BookingRef ref(String model, Booking booking, String region) {
    return BookingRef.newBuilder().setModel(model).setRequestId(booking.getRequestId())
        .setAttempt(booking.getAttempt()).setRegion(region.isEmpty() ? booking.getRegion() : region).build();
  }

  /** A Book on {@code bookOn}, then its Release on {@code releaseOn} (in {@code region}; empty: the booking's). */
  private static CompletionStage<?> grpcPair(ManagedChannel bookOn, ManagedChannel releaseOn, RouteRequest request,
      String region) {
    return call(RouterGrpc.newFutureStub(bookOn).withDeadlineAfter(DEADLINE_MS, TimeUnit.MILLISECONDS).book(request))
        .thenCompose(booking -> call(RouterGrpc.newFutureStub(releaseOn)
            .withDeadlineAfter(DEADLINE_MS, TimeUnit.MILLISECONDS).release(ref(request.getModel(), booking, region))));
  }

  private static CompletionStage<?> modelClientPair(ModelClient client, long[] hashes, String id) {
    SelectionRequest request = Fixtures.request(hashes, id);
    Duration deadline = Duration.ofMillis(DEADLINE_MS);
    return client.book(request, deadline).thenCompose(b -> client.release(b.requestId(), b.attempt(), deadline));
  }

  private static <T> CompletableFuture<T> call(ListenableFuture<T> future) {
    CompletableFuture<T> out = new CompletableFuture<>();
    Futures.addCallback(future, new FutureCallback<T>() {
      @Override
      public void onSuccess(T result) {
        out.complete(result);
      }

      @Override
      public void onFailure(Throwable t) {
        out.completeExceptionally(t);
      }
    }, MoreExecutors.directExecutor());
    return out;
  }

  // ---- driving

  private static String cpuRatio(Rate rate, Rate reference) {
    return Report.ratio(rate.cpuMicrosPerPair() / reference.cpuMicrosPerPair());
  }

  private static String cpu(Rate rate) {
    return String.format(Locale.ROOT, "%.0f (JIT %.0f)", rate.cpuMicrosPerPair(), rate.jitMicrosPerPair());
  }

  /**
   * One round of {@code lanes} side by side: {@code perPath} of each, in slices of at most {@link #SLICE} that
   * alternate the paths; returns each path's rate over its slices.
   */
  private static Rate[] sideBySide(Lane[] lanes, String[] names, int callers, Duration perPath, int round) {
    int slices = (int) Math.max(1, perPath.toNanos() / SLICE.toNanos());
    Duration slice = perPath.dividedBy(slices);
    Window[] sums = new Window[lanes.length];
    for (int i = 0; i < lanes.length; i++) {
      sums[i] = new Window(0, 0, 0, 0);
    }
    // the previous round's garbage is collected before this one is timed, not during it
    System.gc();
    for (int s = 0; s < slices; s++) {
      for (int k = 0; k < lanes.length; k++) {
        int path = (k + round - 1 + s) % lanes.length;
        sums[path] = sums[path].plus(window(lanes[path], callers, slice));
      }
    }
    Rate[] rates = new Rate[lanes.length];
    for (int path = 0; path < lanes.length; path++) {
      rates[path] = sums[path].rate();
      Progress.line("owner", "%s, %d callers: %s pairs/s, %.0f µs CPU/pair (JIT %.0f)", names[path], callers,
          Report.rate(rates[path].pairsPerSecond()), rates[path].cpuMicrosPerPair(), rates[path].jitMicrosPerPair());
    }
    return rates;
  }

  /** What one window of closed loops completed, in how long, at what CPU (the process's and the JIT's). */
  private record Window(double pairs, double seconds, double cpuMicros, double jitMicros) {
    Window plus(Window other) {
      return new Window(pairs + other.pairs, seconds + other.seconds, cpuMicros + other.cpuMicros,
          jitMicros + other.jitMicros);
    }

    Rate rate() {
      return new Rate(pairs / seconds, pairs == 0 ? Double.NaN : cpuMicros / pairs,
          pairs == 0 ? Double.NaN : jitMicros / pairs);
    }
  }

  /** Runs {@code callers} closed loops of pairs for {@code duration}. */
  private static Window window(Lane lane, int callers, Duration duration) {
    var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    AtomicLong done = new AtomicLong();
    AtomicLong ids = new AtomicLong();
    long end = System.nanoTime() + duration.toNanos();
    String prefix = "pair-" + System.nanoTime() + "-";
    List<CompletableFuture<Void>> loops = new ArrayList<>();
    long pid = ProcessHandle.current().pid();
    long jitStart = ProcStat.compilerTicks(pid);
    long cpuStart = os.getProcessCpuTime();
    long start = System.nanoTime();
    for (int i = 0; i < callers; i++) {
      CompletableFuture<Void> loop = new CompletableFuture<>();
      next(lane, prefix, ids, done, end, loop);
      loops.add(loop);
    }
    CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).join();
    double seconds = (System.nanoTime() - start) / 1e9;
    double cpuMicros = (os.getProcessCpuTime() - cpuStart) / 1e3;
    double jitMicros = (ProcStat.compilerTicks(pid) - jitStart) * 1e6 / TICKS_PER_SECOND;
    return new Window(done.get(), seconds, cpuMicros, jitMicros);
  }

  private static void next(Lane lane, String prefix, AtomicLong ids, AtomicLong done, long end,
      CompletableFuture<Void> loop) {
    if (System.nanoTime() >= end) {
      loop.complete(null);
      return;
    }
    lane.pair(prefix + ids.incrementAndGet()).whenComplete((released, failure) -> {
      if (failure != null) {
        loop.completeExceptionally(failure);
      } else {
        done.incrementAndGet();
        next(lane, prefix, ids, done, end, loop);
      }
    });
  }
}
