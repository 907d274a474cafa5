package io.kvrouter.core.model;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * A registered engine replica of one model. It expands to ranks [dpStart, dpStart + dpSize). Sizes are ints: the
 * proto's uint32 values above 2^31 arrive negative and are rejected by RequestLimits. {@code taints}: its placement
 * taints ({@link Taints}), sorted.
 *
 * <p>{@code role}: which phase the worker serves (aggregated: both; prefill or decode: one half of a disaggregated
 * pair). {@code loraAdapters}: the LoRA adapters it declared loaded at registration (sorted, never null).
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
    WorkerRole role,
    java.util.Set<String> taints,
    SortedSet<String> loraAdapters) {

  public WorkerConfig {
    endpoint = endpoint == null ? "" : endpoint;
    region = region == null ? "" : region;
    role = role == null ? WorkerRole.AGGREGATED : role;
    taints = taints == null || taints.isEmpty() ? java.util.Set.of()
        : java.util.Collections.unmodifiableSortedSet(new java.util.TreeSet<>(taints));
    loraAdapters = loraAdapters == null || loraAdapters.isEmpty()
        ? java.util.Collections.emptySortedSet()
        : java.util.Collections.unmodifiableSortedSet(new TreeSet<>(loraAdapters));
  }

  /** A worker of no taint that declared no LoRA adapter. */
  public WorkerConfig(String workerId, int dpStart, int dpSize, int maxNumBatchedTokens, int totalKvBlocks,
      int blockSize, String endpoint, String region, WorkerRole role) {
    this(workerId, dpStart, dpSize, maxNumBatchedTokens, totalKvBlocks, blockSize, endpoint, region, role, null, null);
  }

  /** This worker declaring {@code adapters} loaded. */
  public WorkerConfig withLoraAdapters(Set<String> adapters) {
    return new WorkerConfig(workerId, dpStart, dpSize, maxNumBatchedTokens, totalKvBlocks, blockSize, endpoint,
        region, role, taints, adapters == null ? null : new TreeSet<>(adapters));
  }

  /** This worker carrying {@code placementTaints} ({@link Taints}). */
  public WorkerConfig withTaints(Set<String> placementTaints) {
    return new WorkerConfig(workerId, dpStart, dpSize, maxNumBatchedTokens, totalKvBlocks, blockSize, endpoint,
        region, role, placementTaints, loraAdapters);
  }

  /** Whether the worker declared the LoRA adapter {@code name} loaded. */
  public boolean hasLoraAdapter(String name) {
    return loraAdapters.contains(name);
  }

  /** Whether the worker carries every one of {@code required} ({@link Taints}). */
  public boolean hasTaints(java.util.Set<String> required) {
    return taints.containsAll(required);
  }

  /** Whether {@code dpRank} is one of this worker's ranks, [dpStart, dpStart + dpSize). */
  public boolean hasRank(int dpRank) {
    return dpRank >= dpStart && dpRank < dpStart + dpSize;
  }

  /** Throws INVALID_ARGUMENT unless {@code dpRank} is one of this worker's ranks. */
  public void requireRank(int dpRank) {
    if (!hasRank(dpRank)) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE,
          "worker '" + RoutingError.echo(workerId) + "' has no dp rank "
          + dpRank)
          .toException();
    }
  }

  public Rank rank(int dpRank) {
    return new Rank(workerId, dpRank);
  }

  public static RoutingException unknownWorker(String model, String workerId) {
    return RoutingError.notFound(RoutingError.UNKNOWN_WORKER, "worker '" + RoutingError.echo(workerId)
        + "' is not registered for model '" + RoutingError.echo(model) + "'").toException();
  }
}
