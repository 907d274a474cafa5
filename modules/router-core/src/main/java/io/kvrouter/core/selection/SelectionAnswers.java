package io.kvrouter.core.selection;

import io.kvrouter.core.model.WorkerConfig;

/** Builds the answer for the chosen candidate; shared by advisory Selects and Books. */
public final class SelectionAnswers {
  private SelectionAnswers() {}

  public static SelectionResult build(SelectionView view, SelectionRequest request, Candidates c, int chosen) {
    int rankIndex = c.rankIndex(chosen);
    WorkerConfig worker = view.rankWorker(rankIndex);
    int overlapBlocks = c.deviceOverlap(chosen) + c.hostOverlap(chosen) + c.diskOverlap(chosen);
    int cachedTokens = cachedTokens(view, request, c, chosen);
    return new SelectionResult(view.rank(rankIndex), worker.endpoint(), worker.region(), overlapBlocks, cachedTokens,
        c.cost(chosen), view.cell(rankIndex).booked(), view.version(), view.policy().policy().wireName());
  }

  /**
   * The prompt tokens candidate {@code i} holds cached: device blocks, plus host and disk blocks beyond them weighted
   * by the policy's cache-hit weights, at most the prompt.
   */
  public static int cachedTokens(SelectionView view, SelectionRequest request, Candidates c, int i) {
    double effectiveBlocks = c.deviceOverlap(i)
        + view.policy().hostCacheHitWeight() * c.hostOverlap(i)
        + view.policy().diskCacheHitWeight() * c.diskOverlap(i);
    return (int) Math.min(request.islTokens(), Math.round(effectiveBlocks * view.blockSize()));
  }
}
