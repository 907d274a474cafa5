package io.kvrouter.bench.transport;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.v1.AdminGrpc;
import io.kvrouter.api.v1.KvEvent;
import io.kvrouter.api.v1.KvEventAck;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.KvStored;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.StoredBlock;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkersGrpc;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The router workload of issue 4: 64 workers registered through the Workers service, the {@code kv} policy, and KV
 * events so that overlaps are real: worker {@code w00..w15} holds the first 8, 16, ..., 128 blocks of the prompt.
 */
public final class RouterSetup {
  static final int EVENT_FED_WORKERS = 16;
  private static final Duration CALL = Duration.ofSeconds(10);
  private static final Set<Status.Code> NOT_READY = Set.of(Status.Code.UNAVAILABLE, Status.Code.DEADLINE_EXCEEDED,
      Status.Code.UNKNOWN, Status.Code.INTERNAL, Status.Code.UNIMPLEMENTED);

  private RouterSetup() {}

  /** A one-node router on loopback ephemeral ports, serving gRPC with {@code binding}, Pekko logging at WARNING. */
  public static String loopbackRouterConfig(String binding) {
    return """
        kvrouter.grpc.host = 127.0.0.1
        kvrouter.grpc.port = 0
        kvrouter.management.host = 127.0.0.1
        kvrouter.management.port = 0
        pekko.remote.artery.canonical.hostname = 127.0.0.1
        pekko.remote.artery.canonical.port = 0
        pekko.loglevel = WARNING
        """ + "kvrouter.grpc.binding = \"" + binding + "\"\n";
  }

  static String workerId(int i) {
    return String.format("w%02d", i);
  }

  /** Registers the fleet, sets the policy, publishes events; waits up to a minute for the node to serve. */
  static String run(int port, boolean kvEvents) throws InterruptedException {
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (true) {
        try {
          Unary.call(channel, WorkersGrpc.getRegisterMethod(), worker(0), CALL);
          break;
        } catch (StatusRuntimeException e) {
          if (!NOT_READY.contains(e.getStatus().getCode()) || System.nanoTime() > deadline) {
            throw new IllegalStateException("router did not accept Register: " + Unary.describe(e), e);
          }
          Thread.sleep(250);
        }
      }
      for (int i = 1; i < Bodies.WORKERS; i++) {
        Unary.call(channel, WorkersGrpc.getRegisterMethod(), worker(i), CALL);
      }
      Unary.call(channel, AdminGrpc.getSetPolicyMethod(),
          SetPolicyRequest.newBuilder().setModel(Bodies.MODEL).setPolicy("kv").build(), CALL);
      if (!kvEvents) {
        return Bodies.WORKERS + " workers, kv policy, no KV events";
      }
      long[] sequence = Bodies.sequenceHashes();
      int applied = 0;
      for (int i = 0; i < EVENT_FED_WORKERS; i++) {
        int blocks = Math.min(sequence.length, (i + 1) * sequence.length / EVENT_FED_WORKERS);
        KvStored.Builder stored = KvStored.newBuilder();
        for (int b = 0; b < blocks; b++) {
          // an engine's own block ids; the index navigates by tokens_hash
          stored.addBlocks(StoredBlock.newBuilder().setBlockHash(1_000_000L * (i + 1) + b)
              .setTokensHash(sequence[b]));
        }
        KvEventAck ack = Unary.call(channel, WorkersGrpc.getPublishKvEventsMethod(), KvEventBatch.newBuilder()
            .setModel(Bodies.MODEL).setWorkerId(workerId(i)).setDpRank(0)
            .addEvents(KvEvent.newBuilder().setEventId(1).setStored(stored)).build(), CALL).message();
        applied += ack.getApplied();
      }
      return Bodies.WORKERS + " workers, kv policy, KV events on " + EVENT_FED_WORKERS + " workers ("
          + sequence.length / EVENT_FED_WORKERS + ".." + sequence.length + " of " + sequence.length
          + " prompt blocks; " + applied + " events applied)";
    } finally {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  static WorkerRegistration worker(int i) {
    return WorkerRegistration.newBuilder()
        .setModel(Bodies.MODEL)
        .setWorkerId(workerId(i))
        .setDpSize(1)
        // room for every outstanding booking of the pair driver, so Book never queues on capacity
        .setMaxNumBatchedTokens(1 << 22)
        .setTotalKvBlocks(1 << 20)
        .setBlockSize(Bodies.BLOCK_SIZE)
        .setEndpoint("http://10.0.0." + (i + 1) + ":8000")
        .setRegion("default")
        .build();
  }
}
