package io.kvrouter.core.selection;

import java.util.Set;

/**
 * A request's placement constraints: only ranks of workers carrying every {@code requiredTaints} are candidates
 * (filtered {@link FilterReason#MISSING_TAINTS}; none left: FAILED_PRECONDITION {@code REQUIRED_TAINTS_UNMET}); a
 * rank whose worker carries every {@code preferredTaints} has its cost multiplied by
 * {@code preferredTaintMultiplier} (in [0, 1]; not applied to a pinned request, as in Dynamo).
 */
public record PlacementConstraints(Set<String> requiredTaints, Set<String> preferredTaints,
    double preferredTaintMultiplier) {
  /** The multiplier when a request names preferred taints but no multiplier. */
  public static final double DEFAULT_PREFERRED_TAINT_MULTIPLIER = 0.5;

  public PlacementConstraints {
    requiredTaints = requiredTaints == null ? Set.of() : requiredTaints;
    preferredTaints = preferredTaints == null ? Set.of() : preferredTaints;
  }

  public boolean isEmpty() {
    return requiredTaints.isEmpty() && preferredTaints.isEmpty();
  }
}
