package io.kvrouter.bench;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.server.RouterNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardRegion.CurrentShardRegionState;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * A region of router nodes in this JVM on loopback ({@link LoopbackNode}: every port ephemeral): the first node forms
 * the cluster, the others join it through {@code kvrouter.cluster.seed-nodes} (what {@code KVROUTER_SEED_NODES}
 * sets), all with the loopback failure-detection profile. {@link #crash} stops a node as a kill would.
 */
final class LoopbackRegion implements AutoCloseable {
  private static final Duration UP_TIMEOUT = Duration.ofSeconds(60);

  /**
   * Terminating a node's actor system does not run its coordinated shutdown: it does not hand its shards off or
   * leave the cluster, its peers see it go silent as after a kill -9 and must detect it, down it (split-brain
   * resolver) and remove it before its shards start elsewhere. {@link #close} runs the coordinated shutdown itself.
   */
  private static final String TERMINATE_AS_CRASH = "pekko.coordinated-shutdown.run-by-actor-system-terminate = off\n";

  private final List<RouterNode> nodes;
  private final boolean[] crashed;

  private LoopbackRegion(List<RouterNode> nodes) {
    this.nodes = nodes;
    this.crashed = new boolean[nodes.size()];
  }

  /** {@code size} nodes with {@code config} (HOCON) over the loopback settings; returns once all see each other Up. */
  static LoopbackRegion start(int size, String config) {
    String common = config + "\n" + TERMINATE_AS_CRASH + """
        kvrouter.cluster.failure-detection.profile = loopback
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.log-dead-letters = off
        """;
    List<RouterNode> nodes = new ArrayList<>();
    try {
      RouterNode first = LoopbackNode.start(common);
      nodes.add(first);
      int seedPort = Cluster.get(first.system()).selfMember().address().getPort().orElseThrow();
      for (int i = 1; i < size; i++) {
        nodes.add(LoopbackNode.start(common + "\nkvrouter.cluster.seed-nodes = \"127.0.0.1:" + seedPort + "\"\n"));
      }
      LoopbackRegion region = new LoopbackRegion(nodes);
      region.awaitUp(size);
      return region;
    } catch (RuntimeException e) {
      nodes.forEach(n -> n.system().terminate());
      throw e;
    }
  }

  RouterNode node(int i) {
    return nodes.get(i);
  }

  int size() {
    return nodes.size();
  }

  Address address(int i) {
    return Cluster.get(nodes.get(i).system()).selfMember().address();
  }

  /** The node that has been a member longest (it runs the shard coordinator). */
  int oldest() {
    Member oldest = null;
    for (Member m : Cluster.get(nodes.get(0).system()).state().getMembers()) {
      if (m.status() == MemberStatus.up() && (oldest == null || m.isOlderThan(oldest))) {
        oldest = m;
      }
    }
    for (int i = 0; i < nodes.size(); i++) {
      if (oldest != null && address(i).equals(oldest.address())) {
        return i;
      }
    }
    throw new IllegalStateException("no Up member");
  }

  /** The live node whose shard region runs {@code model}'s admission actor, or -1. */
  int hostOf(String model) {
    for (int i = 0; i < nodes.size(); i++) {
      if (!crashed[i] && entities(i).contains(model)) {
        return i;
      }
    }
    return -1;
  }

  /** The admission entities running on node {@code i}. */
  Set<String> entities(int i) {
    RouterNode node = nodes.get(i);
    CurrentShardRegionState state = BenchCluster.join(AskPattern.ask(
        ClusterSharding.get(node.system()).shardState(),
        (org.apache.pekko.actor.typed.ActorRef<CurrentShardRegionState> replyTo) ->
            new GetShardRegionState(ModelAdmission.ENTITY_KEY, replyTo),
        BenchCluster.TIMEOUT, node.system().scheduler()));
    Set<String> ids = new TreeSet<>();
    state.getShards().forEach(shard -> ids.addAll(shard.getEntityIds()));
    return ids;
  }

  /** Members node {@code observer} sees Up and reachable. */
  int reachableUp(int observer) {
    Cluster cluster = Cluster.get(nodes.get(observer).system());
    int up = 0;
    for (Member m : cluster.state().getMembers()) {
      if (m.status() == MemberStatus.up() && !cluster.state().getUnreachable().contains(m)) {
        up++;
      }
    }
    return up;
  }

  /**
   * Stops node {@code i} as a crash would: its actor system terminates at once, without leaving the cluster or
   * handing off its shards (its gRPC server, stopped only by the coordinated shutdown, stays bound and unused).
   */
  void crash(int i) {
    crashed[i] = true;
    nodes.get(i).system().terminate();
  }

  private void awaitUp(int size) {
    long deadline = System.nanoTime() + UP_TIMEOUT.toNanos();
    for (int i = 0; i < nodes.size(); i++) {
      while (reachableUp(i) < size) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the region did not come up within " + UP_TIMEOUT);
        }
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
    }
  }

  /** Runs every live node's coordinated shutdown (leave, hand-off, gRPC unbind) and waits for them to stop. */
  @Override
  public void close() {
    List<CompletableFuture<?>> stopped = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      if (!crashed[i]) {
        CoordinatedShutdown.get(nodes.get(i).system()).run(CoordinatedShutdown.unknownReason());
      }
      stopped.add(nodes.get(i).system().getWhenTerminated().toCompletableFuture());
    }
    try {
      CompletableFuture.allOf(stopped.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      Progress.line("cluster", "region did not stop cleanly: %s", e);
    }
  }
}
