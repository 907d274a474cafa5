package io.kvrouter.core.policy;

import java.util.Map;

/** Fills a selection's candidate costs for one policy; its terms explain a cost. */
public interface Scorer {
  /** Costs stay as they are: the policy's pick rule reads none. */
  Scorer NONE = (scoring, c) -> { };

  /** Whether the candidates' KV overlaps and active-prefix matches must be known before {@link #score}. */
  default boolean readsOverlaps() {
    return false;
  }

  void score(Scoring scoring, ScoredCandidates c);

  /** The terms candidate {@code i}'s cost adds up from, by name (explain); none by default. */
  default Map<String, Double> terms(Scoring scoring, ScoredCandidates c, int i) {
    return Map.of();
  }
}
