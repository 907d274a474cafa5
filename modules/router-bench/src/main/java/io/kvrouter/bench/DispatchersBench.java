package io.kvrouter.bench;

import io.kvrouter.bench.ClusterBench.Placement;
import io.kvrouter.bench.ClusterBench.Settings;
import io.kvrouter.bench.ClusterBench.SideBySide;
import io.kvrouter.cluster.admission.ModelClient;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutorService;

/**
 * {@code bench dispatchers}: the production config's one pool of threads for every actor (router-server's
 * cluster.conf) against Pekko's separate pools (default, internal, remote, and admission's own), side by side in one
 * JVM: the owner's Books with replication on, Books through a non-owner, and Book + Release pairs across regions.
 */
final class DispatchersBench {
  /**
   * Pekko's reference sizes (default 8+ threads, internal 4+, remote 2+), remoting on its own dispatcher, and admission
   * on a pool of its own (2-8 threads, throughput 64): what cluster.conf replaces. Dispatchers under the bench's own
   * paths, which cluster.conf's aliases then name.
   */
  static final String PEKKO_POOLS = """
      pekko.actor.default-dispatcher.fork-join-executor {
        parallelism-min = 8
        parallelism-factor = 1.0
        parallelism-max = 64
      }
      kvrouter.bench.internal-pool {
        type = Dispatcher
        executor = "fork-join-executor"
        throughput = 5
        fork-join-executor { parallelism-min = 4, parallelism-factor = 1.0, parallelism-max = 64 }
      }
      pekko.actor.internal-dispatcher = "kvrouter.bench.internal-pool"
      pekko.remote.artery.advanced.use-dispatcher = "pekko.remote.default-remote-dispatcher"
      pekko.cluster.sharding.use-dispatcher = "pekko.actor.internal-dispatcher"
      kvrouter.bench.admission-pool {
        type = Dispatcher
        executor = "fork-join-executor"
        throughput = 64
        fork-join-executor { parallelism-min = 2, parallelism-factor = 1.0, parallelism-max = 8 }
      }
      kvrouter.admission.dispatcher = "kvrouter.bench.admission-pool"
      """;

  private static final String BOOK_MODEL = "bench/dispatchers";
  /** A Pekko dispatcher's thread of the system {@code kvrouter}: the dispatcher's id, then the thread's number. */
  private static final java.util.regex.Pattern POOL_THREAD =
      java.util.regex.Pattern.compile("^kvrouter-(.+\\.[a-z-]+)-\\d+$");

  private DispatchersBench() {}

  static List<Path> run(Path out, boolean quick) throws Exception {
    Settings d = Settings.defaults(quick);
    // the relayed paths' code is compiled for about 20 s on 2 cores: a longer warm-up than `bench cluster`'s
    Settings s = quick ? d : new Settings(d.workers(), d.threads(), d.paceMillis(), d.rates(), d.viewChanges(),
        d.callers(), d.rounds(), d.windowMillis(), d.maxCallsPerWindow(), 15_000, d.heldBookings(),
        d.loadCallers(), d.holdMillis(), d.failoverMaxMillis(), d.afterRecoveryMillis());
    ExecutorService pool = Fixtures.pool("caller", s.threads());
    Report report = new Report("Dispatchers: one pool of threads for every actor vs Pekko's separate pools");
    report.paragraph("*Pekko's pools*: `" + PEKKO_POOLS.trim().replaceAll("\\s*\n\\s*", " ") + "` over the "
        + "production config; *one pool*: the production config (router-server's cluster.conf: admission, "
        + "remoting, sharding and Pekko's internal actors on the default dispatcher, as many threads as cores). "
        + "Each pair of clusters runs in this JVM at the same time and is measured in alternating windows: "
        + String.format("after %,d ms of untimed warm-up windows through each path (JIT), %d rounds of %,d ms "
            + "windows, median round, range over rounds; callers are tasks on a pool of %d threads; CPU per call is "
            + "the whole process's.", s.warmupMillis(), s.rounds(), s.windowMillis(), s.threads()));
    try {
      region(report, s, pool);
      regions(report, s, pool);
    } finally {
      pool.shutdownNow();
    }
    return List.of(report.write(out, "dispatchers.md"));
  }

  /** Two regions of three nodes, replication on: the owner's Books, then Books through a non-owner. */
  private static void region(Report report, Settings s, ExecutorService pool) {
    try (LoopbackRegion pekko = LoopbackRegion.start(3, ClusterBench.replication(true) + PEKKO_POOLS);
        LoopbackRegion one = LoopbackRegion.start(3, ClusterBench.replication(true))) {
      Placement pekkoModel = ClusterBench.place(pekko, s.workers(), 0);
      Placement oneModel = ClusterBench.place(one, s.workers(), 0);
      ModelClient pekkoOwner = pekko.node(pekkoModel.owner()).cluster().client(pekkoModel.model());
      ModelClient oneOwner = one.node(oneModel.owner()).cluster().client(oneModel.model());
      ModelClient pekkoRelay = pekko.node(ClusterBench.other(pekko, pekkoModel.owner())).cluster()
          .client(pekkoModel.model());
      ModelClient oneRelay = one.node(ClusterBench.other(one, oneModel.owner())).cluster().client(oneModel.model());
      report.heading("One region of three nodes, replication on (each Book answered once a majority holds it)");
      report.paragraph("Two regions of three router nodes in this JVM, one per config, one model of "
          + s.workers() + " workers each; Books alone (fresh request ids, each window's bookings released through "
          + "the owner after it, untimed) through the owner's facade, then through another node's (relayed to the "
          + "owner).");
      report.paragraph("Threads per dispatcher in this JVM (both regions) once the models were placed: "
          + dispatcherThreads() + ".");
      Report.Table table = table();
      rows(table, "Books through the owner",
          ClusterBench.sideBySide("dispatchers: owner", pekkoOwner, pekkoOwner, oneOwner, oneOwner, s, pool));
      rows(table, "Books through a non-owner",
          ClusterBench.sideBySide("dispatchers: non-owner", pekkoRelay, pekkoOwner, oneRelay, oneOwner, s, pool));
      report.table(table);
    }
  }

  /** Two pairs of regions us and eu of one node each: Book + Release from us to eu's actor, and on eu's node. */
  private static void regions(Report report, Settings s, ExecutorService pool) {
    try (TwoRegions pekko = TwoRegions.start(PEKKO_POOLS); TwoRegions one = TwoRegions.start()) {
      for (TwoRegions regions : List.of(pekko, one)) {
        TwoRegions.register(regions.eu, BOOK_MODEL, s.workers());
        regions.awaitPool(regions.us, BOOK_MODEL, "eu");
      }
      report.heading("Two regions of one node each: Book + Release across regions");
      report.paragraph("Two pairs of regions `us` and `eu` of one router node each in this JVM, one pair per "
          + "config, a model of " + s.workers() + " workers in eu only; each call a Book of a fresh request id "
          + "and, once answered, the Release of its booking: from us's node through the relay to eu's actor "
          + "(Artery), and on eu's node (the local actor).");
      Report.Table table = table();
      rows(table, "Book + Release from us to eu", ClusterBench.pairsSideBySide("dispatchers: across regions",
          pekko.us.cluster().client(BOOK_MODEL, "eu"), one.us.cluster().client(BOOK_MODEL, "eu"), s, pool));
      rows(table, "Book + Release on eu's node", ClusterBench.pairsSideBySide("dispatchers: in eu",
          pekko.eu.cluster().client(BOOK_MODEL), one.eu.cluster().client(BOOK_MODEL), s, pool));
      report.table(table);
    }
  }

  /** Live threads counted by dispatcher, from Pekko's thread names ({@code <system>-<dispatcher id>-<n>}). */
  static String dispatcherThreads() {
    java.util.Map<String, Integer> counts = new java.util.TreeMap<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      java.util.regex.Matcher m = POOL_THREAD.matcher(t.getName());
      if (m.matches()) {
        counts.merge(m.group(1), 1, Integer::sum);
      }
    }
    return counts.entrySet().stream().map(e -> "`" + e.getKey() + "` " + e.getValue())
        .collect(java.util.stream.Collectors.joining(", "));
  }

  private static Report.Table table() {
    return new Report.Table("path", "callers", "Pekko's pools calls/s", "CPU µs/call", "one pool calls/s",
        "CPU µs/call", "one pool ÷ Pekko's", "failed Pekko's; one", "range Pekko's; one", "load avg 1 min");
  }

  private static void rows(Report.Table table, String path, List<SideBySide> rows) {
    for (SideBySide r : rows) {
      table.row(path, r.callers(), Report.rate(r.first().callsPerSecond()), Report.us(r.first().cpuNanosPerCall()),
          Report.rate(r.second().callsPerSecond()), Report.us(r.second().cpuNanosPerCall()), Report.ratio(r.ratio()),
          r.first().failures() + "; " + r.second().failures(), r.firstRange() + "; " + r.secondRange(),
          ClusterBench.loadAverage1());
    }
  }
}
