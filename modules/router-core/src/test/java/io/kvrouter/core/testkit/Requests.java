package io.kvrouter.core.testkit;

import io.kvrouter.core.selection.SelectionRequest;
import java.util.Set;

/** Variants of a selection request for tests (the edge builds requests whole). */
public final class Requests {
  private Requests() {}

  /** A request with only a prompt length. */
  public static SelectionRequest of(String model, String requestId, int islTokens) {
    return new SelectionRequest(model, requestId, null, islTokens, 0, null, null, null, 0, null, null, null);
  }

  public static SelectionRequest pinned(SelectionRequest r, String workerId, Integer dpRank) {
    return new SelectionRequest(r.model(), r.requestId(), r.blockHashes(), r.islTokens(), r.expectedOutputTokens(),
        workerId, dpRank, r.allowedWorkers(), r.priority(), r.temperature(), r.overlapCredit(), r.prefillLoadScale());
  }

  public static SelectionRequest allowed(SelectionRequest r, Set<String> workers) {
    return new SelectionRequest(r.model(), r.requestId(), r.blockHashes(), r.islTokens(), r.expectedOutputTokens(),
        r.pinnedWorker(), r.pinnedDpRank(), workers, r.priority(), r.temperature(), r.overlapCredit(),
        r.prefillLoadScale());
  }

  public static SelectionRequest withRequestId(SelectionRequest r, String requestId) {
    return new SelectionRequest(r.model(), requestId, r.blockHashes(), r.islTokens(), r.expectedOutputTokens(),
        r.pinnedWorker(), r.pinnedDpRank(), r.allowedWorkers(), r.priority(), r.temperature(), r.overlapCredit(),
        r.prefillLoadScale());
  }
}
