package io.kvrouter.engines.connector;

import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.model.WorkerConfig;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * What a connector does to the router: the operations of the gRPC {@code Workers} service, performed in-process.
 * {@code ClusterEngineSink} implements it over the node's routing layer; tests implement it over a plain index.
 * Failures are router-core's {@code RoutingException}s (a Register conflict: ALREADY_EXISTS
 * {@code WORKER_CONFIG_CONFLICT}; an unknown worker: NOT_FOUND).
 */
public interface EngineSink {

  /** What one published batch did to this node's index (the proto's {@code KvEventAck}). */
  record Published(int applied, int held, long gaps) {}

  /** Registers (or re-registers, idempotently) a worker of {@code model}; completes with whether it was new. */
  CompletionStage<Boolean> register(String model, WorkerConfig worker, Duration timeout);

  /** Deregisters a worker; completes with the bookings it dropped. */
  CompletionStage<Integer> deregister(String model, String workerId, Duration timeout);

  /** The engine's load per rank; also the worker's heartbeat. */
  CompletionStage<Void> reportLoad(String model, String workerId, List<RankReport> ranks, Duration timeout);

  /**
   * Applies one batch of a (worker, rank)'s events (at most 512 events and 8,192 block hashes) to this node's index
   * and fans it out to the region's other nodes. Synchronous.
   */
  Published publish(String model, String workerId, int dpRank, List<KvEventRecord> events);

  /** A rank's index holds at most its registered {@code total_kv_blocks} times this many blocks. */
  int blocksPerKvBlock();
}
