package io.kvrouter.core.regions;

import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.SelectionView;
import java.util.List;

/**
 * One region's pool of a model: what its admission actor publishes every summary interval, as a node last heard it.
 * {@code capacity} is in KV blocks (the sum of total_kv_blocks over the pool's ranks) and {@code load} is the KV
 * blocks its live bookings hold divided by that capacity (0 = idle, 1 = the bookings fill every rank's cache).
 * {@code heardAtMillis} is when this node heard it, on this node's clock (0 on the publishing side), so freshness
 * never compares two nodes' clocks. {@code ownerEndpoint} is the gRPC endpoint (host:port) its admission actor's node
 * advertises, whatever the region configures for callers ({@code routerEndpoints}): the node that books without a
 * relay; empty when that node has advertised none yet.
 */
public record PoolSummary(String model, String region, int workers, int ranks, int inFlight, int pending,
    long capacity, double load, int blockSize, List<String> routerEndpoints, String ownerEndpoint, long epoch,
    long sequence, long heardAtMillis) {

  public PoolSummary {
    routerEndpoints = List.copyOf(routerEndpoints);
  }

  /** The summary of {@code view} (a region's view on its admission actor's node) with {@code pending} queued Books. */
  public static PoolSummary of(String region, SelectionView view, int pending, List<String> routerEndpoints,
      String ownerEndpoint, long sequence) {
    long capacity = 0;
    long heldBlocks = 0;
    int inFlight = 0;
    for (int i = 0; i < view.rankCount(); i++) {
      WorkerConfig worker = view.rankWorker(i);
      RankLoad load = view.cell(i).booked();
      capacity += worker.totalKvBlocks();
      heldBlocks += load.decodeBlocks();
      inFlight += load.inFlight();
    }
    return new PoolSummary(view.model(), region, view.workers().size(), view.rankCount(), inFlight, pending,
        capacity, normalised(heldBlocks, capacity), view.blockSize(), routerEndpoints, ownerEndpoint, view.epoch(),
        sequence, 0);
  }

  /**
   * KV blocks held per block of capacity. Only a pool without workers has no capacity (total_kv_blocks is at least
   * 1), and such a pool is never chosen: its load is 0.
   */
  static double normalised(double heldBlocks, long capacity) {
    return capacity <= 0 ? 0 : heldBlocks / capacity;
  }

  /** This summary as heard by a node at {@code nowMillis}. */
  public PoolSummary heardAt(long nowMillis) {
    return new PoolSummary(model, region, workers, ranks, inFlight, pending, capacity, load, blockSize,
        routerEndpoints, ownerEndpoint, epoch, sequence, nowMillis);
  }

  /**
   * This summary with one more booking of {@code islTokens} prompt tokens (its KV blocks, as admission counts them),
   * for a node that relayed a Book to the pool: its next global calls see the booking before the next summary.
   */
  public PoolSummary plusBooking(int islTokens) {
    long blocks = blockSize <= 0 ? 0 : ((long) islTokens + blockSize - 1) / blockSize;
    double held = capacity <= 0 ? 0 : load * capacity;
    return new PoolSummary(model, region, workers, ranks, inFlight + 1, pending, capacity,
        normalised(held + blocks, capacity), blockSize, routerEndpoints, ownerEndpoint, epoch, sequence,
        heardAtMillis);
  }

  /** Milliseconds since this node heard the summary. */
  public long ageMillis(long nowMillis) {
    return Math.max(nowMillis - heardAtMillis, 0);
  }

  public boolean isStale(long nowMillis, long staleAfterMillis) {
    return ageMillis(nowMillis) > staleAfterMillis;
  }
}
