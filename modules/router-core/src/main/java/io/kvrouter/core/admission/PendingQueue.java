package io.kvrouter.core.admission;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.selection.SelectionRequest;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * Books waiting for capacity, first come first served, and the decisions made for them since they were last
 * collected ({@link Completion}s, addressed by the nonce of the Book's ask).
 */
final class PendingQueue {
  record Pending(String requestId, long nonce, SelectionRequest request, long deadlineMillis, long enqueuedAtMillis) {}

  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  private final List<Completion> completions = new ArrayList<>();

  int size() {
    return pending.size();
  }

  boolean isEmpty() {
    return pending.isEmpty();
  }

  /** Queues a Book; returns its position (1 = head). */
  int enqueue(Pending waiting) {
    pending.addLast(waiting);
    return pending.size();
  }

  Pending head() {
    return pending.peekFirst();
  }

  Pending pollHead() {
    return pending.pollFirst();
  }

  /** A retry of a request id that is still queued takes its place; the abandoned call is answered as superseded. */
  void supersede(String requestId) {
    for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
      Pending waiting = it.next();
      if (waiting.requestId().equals(requestId)) {
        it.remove();
        complete(waiting.nonce(), new BookOutcome.Rejected(new RoutingError(RoutingError.Code.FAILED_PRECONDITION,
            "SUPERSEDED", "a newer Book with the same request_id replaced it")));
      }
    }
  }

  /** Drops the queued Book of this call, if it is still waiting; returns whether it was. */
  boolean cancel(String requestId, long nonce) {
    return pending.removeIf(waiting -> waiting.nonce() == nonce && waiting.requestId().equals(requestId));
  }

  void complete(long nonce, BookOutcome outcome) {
    completions.add(new Completion(nonce, outcome));
  }

  /** Queued Books decided since the last call. */
  List<Completion> drainCompletions() {
    if (completions.isEmpty()) {
      return List.of();
    }
    List<Completion> drained = new ArrayList<>(completions);
    completions.clear();
    return drained;
  }
}
