package io.kvrouter.core.admission;

import java.util.List;
import java.util.Map;

/**
 * The admission queue as an operator sees it.
 *
 * @param enabled whether any class queues (a busy threshold is set)
 * @param pending Books waiting, over all classes
 * @param maxPending the most that may wait at once ({@code max_pending})
 * @param agingMillis {@code queue_aging_ms} (0: strict tiers starve lower ones under sustained load)
 * @param classes every class, {@code default} first, in deficit-round-robin order
 * @param waiting the longest-waiting Books, oldest first, at most {@link #MAX_WAITING_LISTED}
 */
public record QueueSnapshot(
    boolean enabled,
    int pending,
    int maxPending,
    long agingMillis,
    List<ClassSnapshot> classes,
    List<WaitingSnapshot> waiting) {

  public static final int MAX_WAITING_LISTED = 32;

  /**
   * One class. Limits are effective (per worker × the model's current workers), -1 when none. Counters since the
   * admission state started: {@code rejections} by reason ({@code QUEUE_LIMIT_REQUESTS}, {@code
   * QUEUE_LIMIT_RAW_ISL_TOKENS}, {@code QUEUE_LIMIT_CACHED_TOKENS}, {@code MAX_PENDING}, {@code
   * QUEUE_DEADLINE_EXCEEDED}, {@code CANCELLED}, {@code SUPERSEDED}, {@code RECOVERING}, {@code SELECTION_FAILED}).
   */
  public record ClassSnapshot(
      String name,
      String family,
      String bucket,
      String queuePolicy,
      boolean queueing,
      long quantum,
      long deficit,
      int depth,
      long rawIslTokens,
      long cachedTokens,
      long requestsLimit,
      long rawIslTokensLimit,
      long cachedTokensLimit,
      long oldestWaitMillis,
      long enqueued,
      long dispatched,
      long waitedMicrosTotal,
      Map<String, Long> rejections) {}

  /** One waiting Book; {@code deadlineInMillis} -1 when it has none. */
  public record WaitingSnapshot(
      String requestId,
      String policyClass,
      int strictPriority,
      int priority,
      boolean aged,
      int rawIslTokens,
      long uncachedTokens,
      String reason,
      long waitedMillis,
      long deadlineInMillis) {}

  public static final QueueSnapshot EMPTY = new QueueSnapshot(false, 0, 0, 0, List.of(), List.of());
}
