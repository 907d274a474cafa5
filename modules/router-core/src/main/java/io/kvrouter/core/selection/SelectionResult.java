package io.kvrouter.core.selection;

import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;

/**
 * The answer of one selection: the chosen rank, where to reach it, its overlap and cost, and its load. A
 * disaggregated answer's rank is the prefill rank and {@code decode} the decode rank's own answer; {@code decode} is
 * null for a single rank (aggregated, or a decode rank doing its own prefill).
 */
public record SelectionResult(
    Rank rank,
    String endpoint,
    String region,
    int overlapBlocks,
    int cachedTokens,
    double cost,
    RankLoad load,
    long viewVersion,
    String policy,
    SelectionResult decode) {

  /** A single-rank answer. */
  public SelectionResult(Rank rank, String endpoint, String region, int overlapBlocks, int cachedTokens, double cost,
      RankLoad load, long viewVersion, String policy) {
    this(rank, endpoint, region, overlapBlocks, cachedTokens, cost, load, viewVersion, policy, null);
  }

  public SelectionResult withLoad(RankLoad newLoad) {
    return new SelectionResult(rank, endpoint, region, overlapBlocks, cachedTokens, cost, newLoad, viewVersion, policy,
        decode);
  }

  /** This answer (the prefill half) paired with {@code decodeHalf}. */
  public SelectionResult withDecode(SelectionResult decodeHalf) {
    return new SelectionResult(rank, endpoint, region, overlapBlocks, cachedTokens, cost, load, viewVersion, policy,
        decodeHalf);
  }

  /** Whether this is a prefill/decode pair. */
  public boolean disaggregated() {
    return decode != null;
  }
}
