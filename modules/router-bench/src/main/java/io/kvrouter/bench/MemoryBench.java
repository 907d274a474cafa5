package io.kvrouter.bench;

import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.api.v1.AdminClient;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterClient;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkersClient;
import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.server.Main;
import io.kvrouter.server.RouterNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardRegion.CurrentShardRegionState;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.grpc.GrpcClientSettings;

/**
 * What a node keeps for calls it should keep nothing for: heap after GC (and admission entities) on a real one-node
 * router over gRPC, before and after calls that name distinct models nobody registered (Select, Book, Release,
 * GetModelState each), and after register/deregister cycles of distinct models. Run it in a JVM of its own
 * ({@code bin/bench memory}): other benchmarks in the same JVM leave heap behind.
 */
final class MemoryBench {
  record Settings(int unknownNames, int nameBytes, int cycles, int warmup) {
    static Settings defaults(boolean quick) {
      // names of the longest length the contract accepts, so that every call reaches the unknown-model path
      return quick ? new Settings(500, RequestLimits.MAX_ID_LENGTH, 100, 200)
          : new Settings(20_000, RequestLimits.MAX_ID_LENGTH, 3_000, 2_000);
    }
  }

  record Reading(String phase, long calls, long heap, int entities) {}

  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

  private MemoryBench() {}

  static List<Path> run(Path out, boolean quick) throws Exception {
    Settings s = Settings.defaults(quick);
    RouterNode node = LoopbackNode.start("");
    try {
      ActorSystem<Void> system = node.system();
      Cluster cluster = Cluster.get(system);
      long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (cluster.selfMember().status() != MemberStatus.up() && System.nanoTime() < waitUntil) {
        Thread.sleep(50);
      }
      GrpcClientSettings settings = GrpcClientSettings.connectToServiceAt("127.0.0.1", node.grpcPort(), system)
          .withTls(false).withDeadline(CALL_TIMEOUT);
      RouterClient router = RouterClient.create(settings, system);
      WorkersClient workers = WorkersClient.create(settings, system);
      AdminClient admin = AdminClient.create(settings, system);
      await(workers.register(worker("real", "w1")));

      String padding = "x".repeat(s.nameBytes() - 16);
      // warm-up: the same unknown name every time, so code paths are loaded and JIT-ed but nothing new is named
      for (int i = 0; i < s.warmup(); i++) {
        unknownCalls(router, admin, "warm-up-" + padding, i);
      }
      Reading base = read(system, "after warm-up (one model registered)", 0);
      Progress.line("memory", "baseline %,d bytes, %d entities", base.heap(), base.entities());

      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(quick ? 2 : 15);
      int named = 0;
      for (; named < s.unknownNames() && System.nanoTime() < deadline; named++) {
        unknownCalls(router, admin, String.format(Locale.ROOT, "nobody-%08d-", named) + padding, named);
      }
      Reading unknown = read(system, String.format("after %,d distinct unknown names of %,d bytes x (Select, Book, "
          + "Release, GetModelState)", named, s.nameBytes()), 4L * named);
      Progress.line("memory", "after unknown names %,d bytes, %d entities", unknown.heap(), unknown.entities());

      int cycles = 0;
      for (; cycles < s.cycles() && System.nanoTime() < deadline; cycles++) {
        String model = String.format(Locale.ROOT, "cycle-%06d", cycles);
        await(workers.register(worker(model, "w")));
        await(workers.deregister(WorkerKey.newBuilder().setModel(model).setWorkerId("w").build()));
      }
      // an emptied model passivates once the clock is past its last attempt's millisecond (at the latest on its
      // next expiry tick): wait, bounded, for the entity count to stop falling
      int entities = entities(system);
      long settleUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      while (entities > 1 && System.nanoTime() < settleUntil) {
        Thread.sleep(200);
        entities = entities(system);
      }
      Reading cycled = read(system, String.format("after %,d register/deregister cycles of distinct models", cycles),
          2L * cycles);
      Progress.line("memory", "after cycles %,d bytes, %d entities", cycled.heap(), cycled.entities());
      return List.of(write(out, s, base, List.of(unknown, cycled)));
    } finally {
      node.close();
    }
  }

  private static void unknownCalls(RouterClient router, AdminClient admin, String model, int i) throws Exception {
    RouteRequest request = RouteRequest.newBuilder().setModel(model).setRequestId("r" + i).addTokenIds(1).build();
    expectFailure(router.select(request));
    expectFailure(router.book(request));
    await(router.release(BookingRef.newBuilder().setModel(model).setRequestId("r" + i).setAttempt(1).build()));
    expectFailure(admin.getModelState(ModelStateRequest.newBuilder().setModel(model).build()));
  }

  private static WorkerRegistration worker(String model, String id) {
    return WorkerRegistration.newBuilder().setModel(model).setWorkerId(id).setDpSize(1)
        .setMaxNumBatchedTokens(8192).setTotalKvBlocks(1000).setBlockSize(16).setEndpoint("http://" + id)
        .build();
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** The call must be rejected (NOT_FOUND for an unknown model); anything else stops the bench. */
  private static void expectFailure(CompletionStage<?> stage) throws Exception {
    try {
      await(stage);
    } catch (java.util.concurrent.ExecutionException expected) {
      return;
    }
    throw new IllegalStateException("a call on an unknown model succeeded");
  }

  private static Reading read(ActorSystem<Void> system, String phase, long calls) throws Exception {
    int entities = entities(system);
    return new Reading(phase, calls, KvIndexBench.settledHeap(), entities);
  }

  /** Admission entities running on this node. */
  private static int entities(ActorSystem<Void> system) throws Exception {
    CompletionStage<CurrentShardRegionState> state = AskPattern.ask(ClusterSharding.get(system).shardState(),
        replyTo -> new GetShardRegionState(ModelAdmission.ENTITY_KEY, replyTo), CALL_TIMEOUT, system.scheduler());
    return await(state).getShards().stream().mapToInt(shard -> shard.getEntityIds().size()).sum();
  }

  private static Path write(Path out, Settings s, Reading base, List<Reading> after) {
    Report report = new Report("Memory: state kept for unknown models and emptied models");
    report.paragraph("A one-node router (`Main.init`, default config) called over gRPC (pekko-grpc client, "
        + "loopback). Heap: used heap after `System.gc()` x4 (minimum of the readings). Warm-up: "
        + String.format("%,d", s.warmup()) + " rounds of the four calls on one unknown name. Each unknown name is "
        + "called with Select, Book, Release and GetModelState; a cycle registers one worker of a new model and "
        + "deregisters it. Entities: admission actors running on the node (`GetShardRegionState`); the registered "
        + "model `real` is one.");
    Report.Table table = new Report.Table("phase", "calls", "heap after GC (MiB)",
        "growth since the previous row (KiB)", "growth per call (bytes)", "admission entities");
    table.row(base.phase(), "0", mib(base.heap()), "", "", base.entities());
    Reading previous = base;
    for (Reading r : after) {
      long growth = r.heap() - previous.heap();
      table.row(r.phase(), String.format("%,d", r.calls()), mib(r.heap()), String.format("%,d", growth / 1024),
          r.calls() == 0 ? "" : String.format("%,d", growth / r.calls()), r.entities());
      previous = r;
    }
    report.table(table);
    return report.write(out, "memory.md");
  }

  private static String mib(long bytes) {
    return String.format(Locale.ROOT, "%.1f", bytes / 1048576.0);
  }
}
