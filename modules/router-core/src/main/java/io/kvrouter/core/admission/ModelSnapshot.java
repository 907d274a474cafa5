package io.kvrouter.core.admission;

import io.kvrouter.core.model.Rank;

import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.WorkerConfig;
import java.util.List;
import java.util.Map;

/**
 * A model's admission state as an operator sees it (Admin.GetModelState and the management routes); {@code epoch}
 * orders this incarnation after the ones before it, {@code recovering} tells that it is still in recovery mode;
 * {@code queue}: the admission queue's classes, their depths, limits and counters, and the longest-waiting Books;
 * {@code sessions}: the session bindings.
 */
public record ModelSnapshot(
    String model,
    String policy,
    Map<String, String> policyParameters,
    long viewVersion,
    int blockSize,
    List<WorkerSnapshot> workers,
    List<BookingSnapshot> bookings,
    int pending,
    long expiredBookings,
    long epoch,
    boolean recovering,
    QueueSnapshot queue,
    SessionsSnapshot sessions) {

  /** A snapshot of no session binding. */
  public ModelSnapshot(String model, String policy, Map<String, String> policyParameters, long viewVersion,
      int blockSize, List<WorkerSnapshot> workers, List<BookingSnapshot> bookings, int pending, long expiredBookings,
      long epoch, boolean recovering, QueueSnapshot queue) {
    this(model, policy, policyParameters, viewVersion, blockSize, workers, bookings, pending, expiredBookings, epoch,
        recovering, queue, SessionsSnapshot.NONE);
  }

  /**
   * The model's session bindings: how many it holds and may hold, the counters, and the most recently used
   * bindings (at most {@link #MAX_LISTED}), most recent first.
   */
  public record SessionsSnapshot(int bindings, int maxBindings, SessionBindings.Counters counters,
      List<io.kvrouter.core.replication.SessionBinding> recent) {
    public static final int MAX_LISTED = 100;
    public static final SessionsSnapshot NONE = new SessionsSnapshot(0, 0,
        new SessionBindings.Counters(0, 0, 0, 0, 0), List.of());
  }

  public record WorkerSnapshot(WorkerConfig config, boolean available, List<RankSnapshot> ranks) {}

  public record RankSnapshot(int dpRank, RankLoad load, int liveBookings, boolean overloaded, ReportedLoad reported) {}

  public record BookingSnapshot(
      String requestId,
      long attempt,
      String workerId,
      int dpRank,
      long prefillTokens,
      long decodeBlocks,
      boolean prefillDone,
      long bookedAtMillis,
      long leaseExpiresAtMillis,
      Rank decodeRank) {

    /** A single rank's booking. */
    public BookingSnapshot(String requestId, long attempt, String workerId, int dpRank, long prefillTokens,
        long decodeBlocks, boolean prefillDone, long bookedAtMillis, long leaseExpiresAtMillis) {
      this(requestId, attempt, workerId, dpRank, prefillTokens, decodeBlocks, prefillDone, bookedAtMillis,
          leaseExpiresAtMillis, null);
    }
  }
}
