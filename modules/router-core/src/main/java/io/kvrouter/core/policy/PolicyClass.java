package io.kvrouter.core.policy;

/**
 * One class of the admission queue: which Books it takes (a request family and/or an uncached-prompt bucket; neither:
 * an explicit class, named directly by a request's {@code policy_class}), how it orders them, when its pool counts
 * as busy, its share of dispatches ({@code quantum} uncached tokens per deficit-round-robin round) and its limits
 * per worker (null: none), which scale with the model's current worker count.
 *
 * @param busyWorkerRatio null: the pool is busy when every eligible rank is; else when at least this fraction is
 */
public record PolicyClass(
    String name,
    String family,
    String bucket,
    QueueOrder order,
    BusyThresholds busy,
    Double busyWorkerRatio,
    long quantum,
    Long requestsPerWorker,
    Long rawIslTokensPerWorker,
    Long cachedTokensPerWorker) {

  /** The synthetic class every Book that no declared class takes belongs to. */
  public static final String DEFAULT = "default";

  /** The kinds of queue limit, as a rejection names them. */
  public enum LimitKind {
    REQUESTS("requests"),
    RAW_ISL_TOKENS("raw_isl_tokens"),
    CACHED_TOKENS("cached_tokens");

    private final String wireName;

    LimitKind(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }
  }

  /** A class queues only when one of its busy thresholds is set. */
  public boolean queueingEnabled() {
    return busy.isSet();
  }

  /** Neither family nor bucket: a request names it by its {@code policy_class}. */
  public boolean explicit() {
    return family == null && bucket == null;
  }

  /** The per-worker limit of {@code kind}, or null when there is none. */
  public Long perWorker(LimitKind kind) {
    return switch (kind) {
      case REQUESTS -> requestsPerWorker;
      case RAW_ISL_TOKENS -> rawIslTokensPerWorker;
      case CACHED_TOKENS -> cachedTokensPerWorker;
    };
  }
}
