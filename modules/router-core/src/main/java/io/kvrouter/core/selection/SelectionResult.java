package io.kvrouter.core.selection;

import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;

/** The answer of one selection: the chosen rank, where to reach it, its overlap and cost, and its load. */
public record SelectionResult(
    Rank rank,
    String endpoint,
    String region,
    int overlapBlocks,
    int cachedTokens,
    double cost,
    RankLoad load,
    long viewVersion,
    String policy) {

  public SelectionResult withLoad(RankLoad newLoad) {
    return new SelectionResult(rank, endpoint, region, overlapBlocks, cachedTokens, cost, newLoad, viewVersion, policy);
  }
}
