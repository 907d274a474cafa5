package io.kvrouter.core.admission;

import io.kvrouter.core.replication.BookingChange;
import io.kvrouter.core.replication.LedgerSnapshot;
import io.kvrouter.core.replication.ReplicationLog;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * A model's live bookings by request id, and the attempt ids that fence them. Every mutation of a booking is fenced
 * by (request_id, attempt); attempts are unique per model across incarnations: each ledger issues attempts above the
 * floor it was built with. Single-threaded (the admission actor's); it can be snapshotted and rebuilt. Every
 * booking opened, changed or closed is told to the {@link ReplicationLog} it replicates to, if any.
 */
public final class BookingLedger {
  private final LinkedHashMap<String, Booking> bookings = new LinkedHashMap<>();
  private final AttemptIds attempts;
  private ReplicationLog log;

  /** An empty ledger whose attempts lie above {@code attemptFloor} (0: none issued before). */
  public BookingLedger(long attemptFloor) {
    this.attempts = new AttemptIds(attemptFloor);
  }

  /** The ledger {@code snapshot} was taken of. */
  public BookingLedger(LedgerSnapshot snapshot) {
    this(snapshot.highestAttempt());
    for (LedgerSnapshot.Entry e : snapshot.bookings()) {
      Booking booking = new Booking(e.requestId(), e.attempt(), e.rank(), e.prefillTokens(), e.decodeBlocks(),
          e.bookedAtMillis(), e.queuedMicros(), e.selection(), e.nonces(), e.retry(), e.leaseExpiresAtMillis(),
          e.sequenceHashes(), e.policyClass());
      booking.prefillDone = e.prefillDone();
      bookings.put(booking.requestId, booking);
    }
  }

  /** From now on, every booking opened, changed or closed is recorded in {@code replicationLog}. */
  void replicateTo(ReplicationLog replicationLog) {
    this.log = replicationLog;
  }

  public LedgerSnapshot snapshot() {
    List<LedgerSnapshot.Entry> entries = new ArrayList<>(bookings.size());
    for (Booking b : bookings.values()) {
      entries.add(entry(b));
    }
    return new LedgerSnapshot(entries, attempts.last());
  }

  private static LedgerSnapshot.Entry entry(Booking b) {
    return new LedgerSnapshot.Entry(b.requestId, b.attempt, b.rank, b.prefillTokens, b.decodeBlocks,
        b.bookedAtMillis, b.queuedMicros, b.selection, b.sequenceHashes, List.copyOf(b.nonces), b.retry, b.prefillDone,
        b.leaseExpiresAtMillis, b.policyClass);
  }

  boolean isEmpty() {
    return bookings.isEmpty();
  }

  /** The highest attempt this ledger (or the incarnation it was rebuilt from) issued; 0 if none. */
  long highestAttempt() {
    return attempts.last();
  }

  /** The live booking of a request id, whatever its attempt, or null. */
  Booking live(String requestId) {
    return bookings.get(requestId);
  }

  /** The live booking matching both request id and attempt, or null: a stale attempt never reaches a newer one. */
  Booking fenced(String requestId, long attempt) {
    Booking booking = bookings.get(requestId);
    return booking != null && booking.attempt == attempt ? booking : null;
  }

  /** Records a new booking under a fresh attempt. */
  Booking open(String requestId, Rank rank, long prefillTokens, long decodeBlocks, long nowMillis, long queuedMicros,
      SelectionResult selection, long nonce, int retry, long leaseExpiresAtMillis, long[] sequenceHashes,
      String policyClass) {
    Booking booking = new Booking(requestId, attempts.next(nowMillis), rank, prefillTokens, decodeBlocks, nowMillis,
        queuedMicros, selection, List.of(nonce), retry, leaseExpiresAtMillis, sequenceHashes, policyClass);
    bookings.put(requestId, booking);
    if (log != null && log.isEnabled()) {
      log.opened(entry(booking));
    }
    return booking;
  }

  /** Marks the booking's prefill done and sets its new lease. */
  void markPrefillDone(Booking booking, long leaseExpiresAtMillis) {
    booking.prefillDone = true;
    renew(booking, leaseExpiresAtMillis);
  }

  void renew(Booking booking, long leaseExpiresAtMillis) {
    booking.leaseExpiresAtMillis = leaseExpiresAtMillis;
    changed(booking);
  }

  /** Binds a replay's call to the booking ({@link Booking#bind}). */
  void bind(Booking booking, long nonce, int retry) {
    if (booking.bind(nonce, retry)) {
      changed(booking);
    }
  }

  /**
   * Unbinds a cancelled call; returns true when that was the booking's last call (the caller frees it then).
   * False, with nothing changed, when the call was not bound to it.
   */
  boolean unbindIsLast(Booking booking, long nonce) {
    if (!booking.unbind(nonce)) {
      return false;
    }
    if (booking.nonces.isEmpty()) {
      return true;
    }
    changed(booking);
    return false;
  }

  private void changed(Booking booking) {
    if (log != null && log.isEnabled()) {
      log.changed(new BookingChange(booking.requestId, booking.attempt, booking.prefillDone,
          booking.leaseExpiresAtMillis, List.copyOf(booking.nonces), booking.retry));
    }
  }

  void close(Booking booking) {
    bookings.remove(booking.requestId);
    closed(booking);
  }

  private void closed(Booking booking) {
    if (log != null) {
      log.closed(booking.requestId, booking.attempt);
    }
  }

  /** Drops every booking on a worker's ranks; returns how many. */
  int dropWorker(String workerId) {
    int dropped = 0;
    for (Iterator<Booking> it = bookings.values().iterator(); it.hasNext(); ) {
      Booking booking = it.next();
      if (booking.rank.workerId().equals(workerId)) {
        it.remove();
        closed(booking);
        dropped++;
      }
    }
    return dropped;
  }

  /** Bookings whose lease has run out at {@code nowMillis}, oldest first (a copy: the caller closes them). */
  List<Booking> expiredAt(long nowMillis) {
    List<Booking> expired = new ArrayList<>();
    for (Booking booking : bookings.values()) {
      if (booking.leaseExpiresAtMillis <= nowMillis) {
        expired.add(booking);
      }
    }
    return expired;
  }

  Collection<Booking> all() {
    return Collections.unmodifiableCollection(bookings.values());
  }
}
