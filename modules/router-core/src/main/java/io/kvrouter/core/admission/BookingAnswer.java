package io.kvrouter.core.admission;

import io.kvrouter.core.selection.SelectionResult;

/**
 * What a Book answers: the selection (with the rank's load after booking) and the booking's fencing token;
 * {@code epoch} is the admission state's, so a relaying node can apply {@code selection.load()} to its view's cell.
 * {@code policyClass}: the admission queue class the Book was put in ("" when not known: a booking recovered from an
 * earlier version). {@code session}: what the Book did to its session's binding (null: no session, or affinity
 * off, or a replay).
 */
public record BookingAnswer(
    SelectionResult selection,
    String requestId,
    long attempt,
    boolean replay,
    long queuedMicros,
    long leaseExpiresAtMillis,
    long epoch,
    String policyClass,
    SessionOutcome session) {

  public BookingAnswer {
    policyClass = policyClass == null ? "" : policyClass;
  }

  /** An answer of no session. */
  public BookingAnswer(SelectionResult selection, String requestId, long attempt, boolean replay, long queuedMicros,
      long leaseExpiresAtMillis, long epoch, String policyClass) {
    this(selection, requestId, attempt, replay, queuedMicros, leaseExpiresAtMillis, epoch, policyClass, null);
  }

  /** An answer of no known class. */
  public BookingAnswer(SelectionResult selection, String requestId, long attempt, boolean replay, long queuedMicros,
      long leaseExpiresAtMillis, long epoch) {
    this(selection, requestId, attempt, replay, queuedMicros, leaseExpiresAtMillis, epoch, "", null);
  }

  /** The decode rank's load after this booking (a prefill/decode pair), or null. */
  public LoadUpdate decodeLoadUpdate() {
    SelectionResult decode = selection.decode();
    return decode == null ? null : new LoadUpdate(epoch, decode.rank(), decode.load());
  }

  /** The booked rank's load after this booking, for a relaying node's view. */
  public LoadUpdate loadUpdate() {
    return new LoadUpdate(epoch, selection.rank(), selection.load());
  }
}
