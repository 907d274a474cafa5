package io.kvrouter.core.explain;

/**
 * Why a Book waited in the admission queue, and what let it go: kept with the Book's decision when it leaves the
 * queue booked.
 *
 * @param reason {@code ALL_BUSY} (every eligible rank was busy by its class's thresholds when it arrived) or
 *     {@code BACKLOG} (its class already had Books waiting, which a new arrival never bypasses)
 * @param busyRanks the eligible ranks busy by its class's thresholds when it arrived
 * @param eligibleRanks the ranks it could go to when it arrived
 * @param queuedAhead the Books of its class waiting when it arrived
 * @param uncachedTokens its prompt tokens not cached on the best eligible rank when it arrived (its WSPT and
 *     deficit-round-robin cost is {@code max(1, uncachedTokens)})
 * @param aged it had waited the model's {@code queue_aging_ms} and ranked above every strict tier
 * @param dispatchedBy what freed the capacity it took: {@code RELEASE}, {@code PREFILL_DONE}, {@code LOAD_REPORT},
 *     {@code WORKER_ADDED}, {@code WORKER_REMOVED}, {@code POLICY}, {@code EXPIRY} (the periodic check: leases, aging),
 *     {@code CANCEL}, {@code ENQUEUE}
 */
public record QueueWait(
    String policyClass,
    int strictPriority,
    int priority,
    String reason,
    int busyRanks,
    int eligibleRanks,
    int queuedAhead,
    long uncachedTokens,
    boolean aged,
    long waitedMicros,
    String dispatchedBy) {}
