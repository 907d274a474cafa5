package io.kvrouter.core.selection;

import io.kvrouter.core.model.WorkerConfig;

/** Builds the answer for the chosen candidate; shared by advisory Selects and Books. */
public final class SelectionAnswers {
  private SelectionAnswers() {}

  public static SelectionResult build(SelectionView view, SelectionRequest request, Candidates c, int chosen) {
    int rankIndex = c.rankIndex(chosen);
    WorkerConfig worker = view.rankWorker(rankIndex);
    int overlapBlocks = c.deviceOverlap(chosen) + c.hostOverlap(chosen) + c.diskOverlap(chosen);
    double effectiveBlocks = c.deviceOverlap(chosen)
        + view.policy().hostCacheHitWeight() * c.hostOverlap(chosen)
        + view.policy().diskCacheHitWeight() * c.diskOverlap(chosen);
    int cachedTokens = (int) Math.min(request.islTokens(), Math.round(effectiveBlocks * view.blockSize()));
    return new SelectionResult(view.rank(rankIndex), worker.endpoint(), worker.region(), overlapBlocks, cachedTokens,
        c.cost(chosen), view.cell(rankIndex).booked(), view.version(), view.policy().policy().wireName());
  }
}
