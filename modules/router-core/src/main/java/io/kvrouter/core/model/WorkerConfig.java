package io.kvrouter.core.model;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;

/**
 * A registered engine replica of one model. It expands to ranks [dpStart, dpStart + dpSize). Sizes are ints: the
 * proto's uint32 values above 2^31 arrive negative and are rejected as invalid sizes.
 */
public record WorkerConfig(
    String workerId,
    int dpStart,
    int dpSize,
    int maxNumBatchedTokens,
    int totalKvBlocks,
    int blockSize,
    String endpoint,
    String region,
    WorkerRole role) {

  public WorkerConfig {
    endpoint = endpoint == null ? "" : endpoint;
    region = region == null ? "" : region;
    role = role == null ? WorkerRole.AGGREGATED : role;
  }

  /** Rejects a configuration that cannot be routed to; changes nothing. */
  public void validate() {
    if (workerId == null || workerId.isBlank()) {
      throw RoutingError.invalid(RoutingError.EMPTY_WORKER_ID, "worker_id must not be empty").toException();
    }
    if (blockSize <= 0) {
      throw RoutingError.invalid(RoutingError.INVALID_BLOCK_SIZE, "block_size must be positive, got " + blockSize)
          .toException();
    }
    requirePositive("dp_size", dpSize);
    requirePositive("max_num_batched_tokens", maxNumBatchedTokens);
    requirePositive("total_kv_blocks", totalKvBlocks);
    if (dpStart < 0) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, "dp_start must not be negative, got " + dpStart)
          .toException();
    }
  }

  private static void requirePositive(String field, int value) {
    if (value <= 0) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, field + " must be positive, got " + value).toException();
    }
  }

  /** Whether {@code dpRank} is one of this worker's ranks, [dpStart, dpStart + dpSize). */
  public boolean hasRank(int dpRank) {
    return dpRank >= dpStart && dpRank < dpStart + dpSize;
  }

  /** Throws INVALID_ARGUMENT unless {@code dpRank} is one of this worker's ranks. */
  public void requireRank(int dpRank) {
    if (!hasRank(dpRank)) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, "worker '" + workerId + "' has no dp rank " + dpRank)
          .toException();
    }
  }

  public Rank rank(int dpRank) {
    return new Rank(workerId, dpRank);
  }

  public static RoutingException unknownWorker(String model, String workerId) {
    return RoutingError.notFound(RoutingError.UNKNOWN_WORKER, "worker '" + workerId + "' is not registered for model '"
        + model + "'").toException();
  }
}
