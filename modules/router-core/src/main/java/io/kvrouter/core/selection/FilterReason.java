package io.kvrouter.core.selection;

/** Why {@link LoadProjection} left a rank out of a selection's candidates. */
public enum FilterReason {
  /** The request pinned another worker, or another dp rank (of the pinned worker, or of every worker when it pinned a dp rank alone). */
  PINNED,
  /** The request's allowed workers do not include the rank's worker (also: not reported yet while recovering). */
  NOT_ALLOWED,
  /** The request excludes the rank's worker (e.g. a front's retry after that worker failed it). */
  EXCLUDED,
  /** The rank reported load once and then stayed silent longer than the heartbeat timeout. */
  UNAVAILABLE,
  /** The rank is above one of the policy's busy thresholds. */
  OVERLOADED,
  /** The rank's worker lacks one of the request's required taints. */
  MISSING_TAINTS,
  /** The rank's worker serves another phase than the one being chosen (prefill, decode or aggregated). */
  ROLE,
  /** The request's LoRA adapter is loaded on other workers, and not on this rank's. */
  LORA_NOT_LOADED,
  /** The request's LoRA adapter is loaded nowhere: its rendezvous hash placed it on another worker. */
  LORA_COLD_PLACEMENT;

  private static final FilterReason[] VALUES = values();

  static FilterReason of(byte ordinal) {
    return VALUES[ordinal];
  }
}
