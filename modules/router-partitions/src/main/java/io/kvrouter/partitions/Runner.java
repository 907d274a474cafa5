package io.kvrouter.partitions;

import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.BookingState;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One scenario run: start the nodes in their namespaces, register the fleet, run the clients, apply the fault, heal,
 * restart what the resolver downed (a supervisor's job), quiesce the clients, audit, release everything, read every
 * node's final state, stop the nodes, and check the history.
 */
public final class Runner {
  /** What a run found, for the tables. */
  public record Result(Scenario scenario, Profile profile, Checker.Verdict verdict, Duration took,
      Map<String, String> timings, Path dir) {}

  private final Path repo;
  private final Path runsDir;
  private final Path pids;
  private final int clientsPerNode;
  private final int workersPerRegion;
  private final long seed;
  private final boolean drain;

  /** @param drain whether the lull before the fault drains the ledger (the clients release what they hold) */
  public Runner(Path repo, Path runsDir, Path pids, int clientsPerNode, int workersPerRegion, long seed,
      boolean drain) {
    this.drain = drain;
    this.repo = repo;
    this.runsDir = runsDir;
    this.pids = pids;
    this.clientsPerNode = clientsPerNode;
    this.workersPerRegion = workersPerRegion;
    this.seed = seed;
  }

  public Result run(Scenario scenario, Profile profile) {
    String stamp = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").withZone(ZoneOffset.UTC).format(Instant.now());
    Path dir = runsDir.resolve(scenario.id + "-" + profile.name() + "-" + stamp);
    try {
      Files.createDirectories(dir);
      Files.createDirectories(pids);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    History history = new History();
    Log log = new Log(history, dir.resolve("run.log"));
    log.info("scenario " + scenario.id + " (" + scenario.fault + "), profile " + profile.name() + ", "
        + scenario.nodes + " nodes, lull " + (drain ? "drain" : "pause") + ", run directory " + dir);
    Net net = new Net(repo, log);
    Map<String, String> env = new HashMap<>();
    env.put("KVROUTER_FAILURE_PROFILE", profile.name());
    env.put("KVROUTER_LEASE", "600s");
    env.putIfAbsent("KVROUTER_JAVA_OPTS", System.getenv().getOrDefault("KVROUTER_PARTITIONS_NODE_JAVA_OPTS",
        "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"));
    Map<String, String> timings = new LinkedHashMap<>();
    Nodes nodes = new Nodes(repo, dir, pids, log, scenario.regionsByNode(), env);
    Rpc rpc = new Rpc(nodes.all());
    Fleet fleet = new Fleet(nodes, rpc, log, workersPerRegion);
    Clients clients = new Clients(history, rpc, nodes, profile.callTimeoutMs(), profile.holds());
    List<LiveSet> audits = new ArrayList<>();
    List<LiveSet> finals = new ArrayList<>();
    long t0 = System.nanoTime();
    try {
      net.heal();
      if (scenario == Scenario.SLOW_LINK) {
        net.proxyStart(scenario.nodes); // before the nodes connect: every remoting connection goes through it
      }
      nodes.startAll(profile.converge());
      timings.put("cluster up", seconds(history.nowMs()));
      fleet.register(Duration.ofSeconds(60));
      fleet.startHeartbeats();
      Map<String, Integer> owners = owners(nodes, rpc);
      log.info("owners: " + owners);
      List<String> global = scenario == Scenario.REGION_CUT ? List.of("west") : List.of();
      clients.start(clientsPerNode, global, seed);
      pause(profile.warmup());
      // the fault is applied at the end of the lull, and the clients resume once it is in place
      clients.lull(true, drain);
      pause(profile.lull());
      int owner = owners.get("east");
      List<Integer> faultSide = fault(scenario, profile, net, nodes, owner, log);
      clients.keeping(true);
      clients.lull(false, drain);
      // from when every rule is in place: a call sent later certainly met the fault
      double faultAt = history.nowMs();
      timings.put("fault at", seconds(faultAt));
      pause(profile.fault());
      double healAt = history.nowMs();
      clients.keeping(false);
      net.heal();
      if (scenario == Scenario.SLOW_LINK) {
        net.unslow();
      }
      log.info("healed");
      timings.put("healed at", seconds(healAt));
      List<Integer> exited = nodes.restartExited();
      if (!exited.isEmpty()) {
        timings.put("nodes exited during the fault", exited.toString());
      }
      nodes.awaitConverged(profile.converge());
      awaitServed(nodes, rpc, profile.converge());
      timings.put("converged after heal", seconds(history.nowMs() - healAt));
      log.info("converged; owners now " + owners(nodes, rpc));
      pause(profile.afterHeal());
      clients.quiesce(5 * profile.callTimeoutMs() + 2_000);
      log.info("clients quiet: " + clients.held().size() + " bookings held, " + clients.unknownBooks().size()
          + " Books of unknown outcome");
      audits.addAll(states(nodes, rpc, history, "audit"));
      finalReleases(clients, nodes, history);
      awaitEmpty(nodes, rpc, Duration.ofSeconds(15));
      finals.addAll(states(nodes, rpc, history, "final"));
      timings.putAll(faultTimings(history.ops(), faultAt, healAt, faultSide, owner));
      log.info(fleet.stats());
    } catch (RuntimeException e) {
      log.info("run aborted: " + e);
      throw e;
    } finally {
      clients.quiesce(1);
      fleet.close();
      rpc.close();
      nodes.close();
      try {
        net.proxyStop();
        net.heal();
      } catch (RuntimeException e) {
        log.info("network reset failed: " + e.getMessage());
      }
    }
    Duration took = Duration.ofNanos(System.nanoTime() - t0);
    List<Op> ops = history.ops();
    History.write(ops, dir.resolve("history.jsonl"));
    Checker.Verdict verdict = Checker.check(new Checker.Input(ops, fleet.capacities(), 600_000, audits, finals));
    String rendered = Checker.render(verdict, 3);
    StringBuilder report = new StringBuilder();
    report.append("scenario ").append(scenario.id).append(" (").append(scenario.fault).append("), profile ")
        .append(profile.name()).append(", lull ").append(drain ? "drain" : "pause").append(", took ").append(took.toSeconds()).append(" s\n");
    timings.forEach((k, v) -> report.append("  ").append(k).append(": ").append(v).append('\n'));
    report.append(rendered);
    try {
      Files.writeString(dir.resolve("verdict.txt"), report + "\n" + Checker.render(verdict, Integer.MAX_VALUE));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    System.out.println(report);
    return new Result(scenario, profile, verdict, took, timings, dir);
  }

  /** Applies the scenario's fault; returns the nodes on the owner's side (the side whose acks are tracked). */
  private static List<Integer> fault(Scenario scenario, Profile profile, Net net, Nodes nodes, int owner, Log log) {
    List<Integer> east = nodes.inRegion("east");
    List<Integer> others = east.stream().filter(n -> n != owner).toList();
    switch (scenario) {
      case MINORITY_OWNER -> {
        others.forEach(n -> net.cut(owner, n));
        return List.of(owner);
      }
      case MAJORITY_OWNER -> {
        int lone = others.get(others.size() - 1);
        others.stream().filter(n -> n != lone).forEach(n -> net.cut(lone, n));
        net.cut(lone, owner);
        return List.of(lone);
      }
      case ONE_WAY -> {
        others.forEach(n -> net.cutOneWay(owner, n));
        return List.of(owner);
      }
      case SLOW_LINK -> {
        for (int n : others) {
          net.slow(owner, n, 200, 50);
          net.slow(n, owner, 200, 50);
        }
        return List.of(owner);
      }
      case REGION_CUT -> {
        for (int e : east) {
          for (int w : nodes.inRegion("west")) {
            net.cut(e, w);
          }
        }
        return east;
      }
      case FAILOVER_PARTITION -> {
        nodes.kill(owner);
        pause(Duration.ofMillis(profile.name().equals("loopback") ? 500 : 2_000));
        int lone = others.get(0);
        others.stream().filter(n -> n != lone).forEach(n -> net.cut(lone, n));
        log.info("node " + lone + " cut off from " + others.stream().filter(n -> n != lone).toList());
        return List.of(lone);
      }
      default -> throw new IllegalStateException(scenario.id);
    }
  }

  /** The node hosting each region's admission actor of the model, read through the region's first live node. */
  static Map<String, Integer> owners(Nodes nodes, Rpc rpc) {
    Map<String, Integer> owners = new LinkedHashMap<>();
    for (String region : nodes.regionNames()) {
      for (int node : nodes.inRegion(region)) {
        if (!nodes.alive(node)) {
          continue;
        }
        try {
          ModelState s = rpc.admin(node, 5_000).getModelState(ModelStateRequest.newBuilder().setModel(Fleet.MODEL)
              .build());
          owners.put(region, Net.nodeOfAddress(s.getHostNode()));
          break;
        } catch (StatusRuntimeException e) {
          // try the region's next node
        }
      }
    }
    return owners;
  }

  /** Waits until every node answers GetModelState for the model, not recovering. */
  private static void awaitServed(Nodes nodes, Rpc rpc, Duration timeout) {
    nodes.await("every node to answer for the model", timeout, () -> {
      for (int node : nodes.all()) {
        try {
          if (rpc.admin(node, 3_000).getModelState(ModelStateRequest.newBuilder().setModel(Fleet.MODEL).build())
              .getRecovering()) {
            return false;
          }
        } catch (StatusRuntimeException e) {
          return false;
        }
      }
      return true;
    });
  }

  private static List<LiveSet> states(Nodes nodes, Rpc rpc, History history, String source) {
    List<LiveSet> sets = new ArrayList<>();
    for (int node : nodes.all()) {
      double t0 = history.nowMs();
      try {
        ModelState s = rpc.admin(node, 5_000).getModelState(ModelStateRequest.newBuilder().setModel(Fleet.MODEL)
            .build());
        Map<BookingKey, String> live = new LinkedHashMap<>();
        for (BookingState b : s.getBookingsList()) {
          live.put(new BookingKey(s.getRegion(), b.getRequestId(), b.getAttempt()), b.getWorkerId());
        }
        sets.add(new LiveSet(source, node, s.getRegion(), t0, history.nowMs(), live));
      } catch (StatusRuntimeException e) {
        throw new IllegalStateException("n" + node + " did not answer GetModelState for the " + source + ": "
            + Rpc.error(e));
      }
    }
    return sets;
  }

  /** Releases every held booking and reclaims every Book of unknown outcome (replay in each region, release). */
  private static void finalReleases(Clients clients, Nodes nodes, History history) {
    double until = history.nowMs() + 60_000;
    for (Clients.Held held : clients.held()) {
      int node = nodes.inRegion(held.key().region()).get(0);
      clients.releaseUntilAnswered("final", node, held.key(), until);
    }
    for (String requestId : clients.unknownBooks()) {
      for (String region : nodes.regionNames()) {
        int node = nodes.inRegion(region).get(0);
        Op op = clients.book("final", node, requestId, false);
        if (op.ok()) {
          clients.releaseUntilAnswered("final", node, op.key(), until);
        }
      }
    }
  }

  private static void awaitEmpty(Nodes nodes, Rpc rpc, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      boolean empty = true;
      for (int node : nodes.all()) {
        try {
          empty &= rpc.admin(node, 3_000).getModelState(ModelStateRequest.newBuilder().setModel(Fleet.MODEL).build())
              .getBookingsCount() == 0;
        } catch (StatusRuntimeException e) {
          empty = false;
        }
      }
      if (empty) {
        return;
      }
      pause(Duration.ofMillis(500));
    }
  }

  /**
   * When the fault side stopped acknowledging fresh Books after the fault, and when the other nodes of the owner's
   * region acknowledged their first.
   */
  static Map<String, String> faultTimings(List<Op> ops, double faultAt, double healAt, List<Integer> faultSide,
      int owner) {
    Map<String, String> t = new LinkedHashMap<>();
    double lastFaultSide = -1;
    int faultSideAcks = 0;
    double firstOther = -1;
    for (Op op : ops) {
      if (op.f() != Op.F.BOOK || !op.ok() || op.replay() || op.invokeMs() < faultAt || op.invokeMs() > healAt
          || !op.region().equals("east")) {
        continue;
      }
      if (faultSide.contains(op.node())) {
        faultSideAcks++;
        lastFaultSide = Math.max(lastFaultSide, op.completeMs());
      } else if (firstOther < 0 || op.completeMs() < firstOther) {
        firstOther = op.completeMs();
      }
    }
    t.put("new Books acknowledged through " + faultSide + " during the fault", faultSideAcks
        + (lastFaultSide < 0 ? "" : ", the last " + seconds(lastFaultSide - faultAt) + " after the fault"));
    t.put("first new Book acknowledged through the other nodes after the fault",
        firstOther < 0 ? "none before the heal" : seconds(firstOther - faultAt) + " after the fault");
    return t;
  }

  static String seconds(double ms) {
    return String.format("%.1f s", ms / 1000);
  }

  static void pause(Duration d) {
    Nodes.sleep(d.toMillis());
  }
}
