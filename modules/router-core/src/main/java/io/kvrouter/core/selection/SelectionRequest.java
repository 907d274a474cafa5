package io.kvrouter.core.selection;

import java.util.Set;

/**
 * What one selection needs, already reduced at the edge: prompts travel as sequence hashes of full blocks (never as
 * tokens) so the record stays small enough for an actor message. Null overrides fall back to the model's policy.
 */
public record SelectionRequest(
    String model,
    String requestId,
    long[] blockHashes,
    int islTokens,
    int expectedOutputTokens,
    String pinnedWorker,
    Integer pinnedDpRank,
    Set<String> allowedWorkers,
    int priority,
    Double temperature,
    Double overlapCredit,
    Double prefillLoadScale) {

  private static final long[] NO_HASHES = new long[0];

  public SelectionRequest {
    blockHashes = blockHashes == null ? NO_HASHES : blockHashes;
    pinnedWorker = pinnedWorker == null || pinnedWorker.isEmpty() ? null : pinnedWorker;
    allowedWorkers = allowedWorkers == null ? Set.of() : allowedWorkers;
  }
}
