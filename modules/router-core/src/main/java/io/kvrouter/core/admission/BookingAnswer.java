package io.kvrouter.core.admission;

import io.kvrouter.core.selection.SelectionResult;

/**
 * What a Book answers: the selection (with the rank's load after booking) and the booking's fencing token;
 * {@code epoch} is the admission state's, so a relaying node can apply {@code selection.load()} to its view's cell.
 */
public record BookingAnswer(
    SelectionResult selection,
    String requestId,
    long attempt,
    boolean replay,
    long queuedMicros,
    long leaseExpiresAtMillis,
    long epoch) {

  /** The booked rank's load after this booking, for a relaying node's view. */
  public LoadUpdate loadUpdate() {
    return new LoadUpdate(epoch, selection.rank(), selection.load());
  }
}
