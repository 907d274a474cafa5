package io.kvrouter.core.replication;

import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import java.util.List;

/**
 * What the owner changed since its previous delta; seq = previous seq + 1 within one epoch (the first delta of an
 * epoch is seq 1). {@code view} is null when membership/policy did not change. Applied to a replica that applied
 * everything before it, it yields exactly the owner's workers, policy, loads and live bookings. Applying it twice
 * changes nothing. Bookings are netted within one delta: one opened and closed in the same interval appears in
 * neither list; one closed and reopened under a new attempt appears in both. Queued Books are netted the same way by
 * nonce ({@code queued}: entered the queue; {@code unqueued}: left it, by nonce). Session bindings likewise by
 * session id ({@code sessions}: bound or refreshed, as they are now; {@code sessionsEnded}: ended), ends applied
 * first.
 */
public record ReplicaDelta(String model, long epoch, long seq, long sentAtMillis, ViewState view,
    List<RankRecord> loads, List<ClosedBooking> closed, List<LedgerSnapshot.Entry> opened,
    List<BookingChange> changed, long highestAttempt, List<QueuedBook> queued, List<Long> unqueued,
    List<SessionBinding> sessions, List<String> sessionsEnded) {

  /** A delta that changes no session binding. */
  public ReplicaDelta(String model, long epoch, long seq, long sentAtMillis, ViewState view, List<RankRecord> loads,
      List<ClosedBooking> closed, List<LedgerSnapshot.Entry> opened, List<BookingChange> changed, long highestAttempt,
      List<QueuedBook> queued, List<Long> unqueued) {
    this(model, epoch, seq, sentAtMillis, view, loads, closed, opened, changed, highestAttempt, queued, unqueued,
        List.of(), List.of());
  }

  public ReplicaDelta {
    loads = List.copyOf(loads);
    closed = List.copyOf(closed);
    opened = List.copyOf(opened);
    changed = List.copyOf(changed);
    queued = List.copyOf(queued);
    unqueued = List.copyOf(unqueued);
    sessions = sessions == null ? List.of() : List.copyOf(sessions);
    sessionsEnded = sessionsEnded == null ? List.of() : List.copyOf(sessionsEnded);
  }
}
