package io.kvrouter.bench;

import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.server.RouterNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * Two regions of one router node each in this JVM ({@link LoopbackNode}s of data centers {@code us} and {@code eu},
 * eu joining us), for the regions benchmarks.
 */
final class TwoRegions implements AutoCloseable {
  private static final Duration CONVERGE = Duration.ofSeconds(60);

  final RouterNode us;
  final RouterNode eu;

  private TwoRegions(RouterNode us, RouterNode eu) {
    this.us = us;
    this.eu = eu;
  }

  static TwoRegions start() {
    return start("");
  }

  /** Both nodes with {@code config} (HOCON) over the production config. */
  static TwoRegions start(String config) {
    RouterNode us = LoopbackNode.start(config + "pekko.cluster.multi-data-center.self-data-center = us\n");
    int seedPort = (Integer) Cluster.get(us.system()).selfMember().address().getPort().get();
    RouterNode eu = LoopbackNode.start(config + "pekko.cluster.multi-data-center.self-data-center = eu\n"
        + "kvrouter.cluster.seed-nodes = \"127.0.0.1:" + seedPort + "\"\n");
    TwoRegions regions = new TwoRegions(us, eu);
    regions.await("both nodes Up", () -> List.of(us, eu).stream().allMatch(node -> {
      int up = 0;
      for (var member : Cluster.get(node.system()).state().getMembers()) {
        up += member.status() == MemberStatus.up() ? 1 : 0;
      }
      return up == 2;
    }));
    return regions;
  }

  /** Registers {@code workers} workers of {@code node}'s region for {@code model} on it, kv policy. */
  static void register(RouterNode node, String model, int workers) {
    String region = node.cluster().region();
    for (int i = 0; i < workers; i++) {
      String id = region + "-w" + i;
      join(node.cluster().client(model).register(new WorkerConfig(id, 0, 1, 8192, 100_000, Fixtures.BLOCK_SIZE,
          "http://" + id + ":8000", region, WorkerRole.AGGREGATED), null));
    }
  }

  /** Waits until {@code node} has heard of {@code model}'s pool in {@code region}. */
  void awaitPool(RouterNode node, String model, String region) {
    await(node.cluster().region() + " hears of " + region + "'s pool of " + model,
        () -> node.cluster().regions().pools().pools(model).stream().anyMatch(p -> p.region().equals(region)));
  }

  void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + CONVERGE.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("not within " + CONVERGE + ": " + what);
      }
      try {
        Thread.sleep(20); // polling a condition, bounded by the deadline above
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }

  static <T> T join(java.util.concurrent.CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    eu.close();
    us.close();
  }
}
