package io.kvrouter.core.replication;

import io.kvrouter.core.membership.Membership;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.model.Rank;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Owner side of replication, composed into the admission state: records what changed since the last
 * {@link ReplicaDelta} (dirty ranks, a view change, bookings opened, changed and closed, netted per request) and
 * turns it into the next delta. Sequence numbers start at 0 per epoch; the first delta is seq 1. Single-threaded.
 */
public final class ReplicationLog implements Membership.Changes {
  private final String model;
  private final long epoch;
  private long seq;
  private final boolean enabled;
  private boolean viewChanged;
  private final LinkedHashSet<Rank> dirtyRanks = new LinkedHashSet<>();
  /** Bookings opened this interval, by request id, as they are now (a later change is folded in). */
  private final LinkedHashMap<String, LedgerSnapshot.Entry> opened = new LinkedHashMap<>();
  /** Changes to bookings opened in an earlier interval, by request id (the last one wins). */
  private final LinkedHashMap<String, BookingChange> changed = new LinkedHashMap<>();
  private final List<ClosedBooking> closed = new ArrayList<>();
  /** Books queued (or whose class changed) this interval, by nonce, as they are now. */
  private final LinkedHashMap<Long, QueuedBook> queued = new LinkedHashMap<>();
  /** The nonces first queued this interval: one that leaves the queue in the same interval vanishes. */
  private final java.util.HashSet<Long> freshlyQueued = new java.util.HashSet<>();
  private final List<Long> unqueued = new ArrayList<>();
  /** Session bindings made or refreshed this interval, by session id, as they are now. */
  private final LinkedHashMap<String, SessionBinding> sessions = new LinkedHashMap<>();
  /** Sessions whose binding ended this interval (and was not made again since). */
  private final LinkedHashSet<String> sessionsEnded = new LinkedHashSet<>();

  /**
   * @param enabled whether changes are recorded. Off, nothing is recorded and {@link #drain} answers nothing: only to
   *     measure what replication costs the owner ({@code kvrouter.replication.enabled})
   */
  public ReplicationLog(String model, long epoch, boolean enabled) {
    this.model = model;
    this.epoch = epoch;
    this.enabled = enabled;
  }

  public long epoch() {
    return epoch;
  }

  /** The seq of the last delta drained (0: none yet in this epoch). */
  public long seq() {
    return seq;
  }

  /** Whether changes are recorded. */
  public boolean isEnabled() {
    return enabled;
  }

  public boolean hasChanges() {
    return viewChanged || !dirtyRanks.isEmpty() || !opened.isEmpty() || !changed.isEmpty() || !closed.isEmpty()
        || !queued.isEmpty() || !unqueued.isEmpty() || !sessions.isEmpty() || !sessionsEnded.isEmpty();
  }

  /** A session was bound, rebound or its binding refreshed. */
  public void sessionBound(SessionBinding binding) {
    if (enabled) {
      sessionsEnded.remove(binding.sessionId());
      sessions.put(binding.sessionId(), binding);
    }
  }

  /** A session's binding ended (expired, evicted, invalidated, its worker gone). */
  public void sessionEnded(String sessionId) {
    if (enabled) {
      sessions.remove(sessionId);
      sessionsEnded.add(sessionId);
    }
  }

  /** A Book entered the admission queue. */
  public void queued(QueuedBook book) {
    if (enabled) {
      queued.put(book.nonce(), book);
      freshlyQueued.add(book.nonce());
    }
  }

  /** A queued Book was put in another class (a policy change): the copies replace their entry of its nonce. */
  public void requeued(QueuedBook book) {
    if (enabled) {
      queued.put(book.nonce(), book);
    }
  }

  /** The queued Book of this nonce left the queue (booked, rejected, cancelled, superseded). */
  public void unqueued(long nonce) {
    if (!enabled) {
      return;
    }
    queued.remove(nonce);
    if (!freshlyQueued.remove(nonce)) {
      unqueued.add(nonce);
    }
  }

  /** Membership, configs or policy changed (a new view was published). */
  @Override
  public void viewChanged() {
    viewChanged = enabled;
  }

  /** A rank's booked load or reported load changed. */
  @Override
  public void rankChanged(Rank rank) {
    if (enabled) {
      dirtyRanks.add(rank);
    }
  }

  public void opened(LedgerSnapshot.Entry booking) {
    if (enabled) {
      opened.put(booking.requestId(), booking);
    }
  }

  /** A live booking's prefill-done flag or lease changed. */
  public void changed(BookingChange change) {
    if (!enabled) {
      return;
    }
    LedgerSnapshot.Entry fresh = opened.get(change.requestId());
    if (fresh != null && fresh.attempt() == change.attempt()) {
      opened.put(change.requestId(), fresh.changed(change));
    } else {
      changed.put(change.requestId(), change);
    }
  }

  /** A booking was closed: one opened in this interval vanishes from the delta, an older one is listed closed. */
  public void closed(String requestId, long attempt) {
    if (!enabled) {
      return;
    }
    LedgerSnapshot.Entry fresh = opened.get(requestId);
    if (fresh != null && fresh.attempt() == attempt) {
      opened.remove(requestId);
      return;
    }
    BookingChange change = changed.get(requestId);
    if (change != null && change.attempt() == attempt) {
      changed.remove(requestId);
    }
    closed.add(new ClosedBooking(requestId, attempt));
  }

  /**
   * What changed since the last drain, as consecutive deltas (seq + 1, + 2, ...) each estimated under
   * {@code maxDeltaBytes} (by {@link SnapshotChunks}' estimate), so a burst of bookings in one interval never makes a
   * message larger than the transport's frame: the view goes first, then closed bookings, opened ones (a booking too
   * large alone keeps only its leading sequence hashes), changed ones, the load records, the queue's changes and the
   * session bindings' (ended ones first). Applied in order they
   * yield what one delta would; a replica between two of them holds part of the burst, as it would between two
   * intervals. Empty when nothing changed.
   *
   * @param view the current membership/policy (read only if it changed)
   * @param load the current record of a rank, or null if the rank no longer exists
   * @param highestAttempt the highest attempt the ledger issued
   */
  public List<ReplicaDelta> drain(long nowMillis, Supplier<ViewState> view, Function<Rank, RankRecord> load,
      long highestAttempt, int maxDeltaBytes) {
    if (!hasChanges()) {
      return List.of();
    }
    Pieces pieces = new Pieces(nowMillis, highestAttempt, maxDeltaBytes);
    if (viewChanged) {
      ViewState current = view.get();
      pieces.room(SnapshotChunks.viewBytes(current));
      pieces.view = current;
    }
    for (ClosedBooking booking : closed) {
      pieces.room(SnapshotChunks.closedBytes(booking));
      pieces.closed.add(booking);
    }
    int alone = maxDeltaBytes - SnapshotChunks.deltaBaseBytes(model);
    for (LedgerSnapshot.Entry booking : opened.values()) {
      LedgerSnapshot.Entry fitted = SnapshotChunks.fitAlone(booking, alone);
      pieces.room(SnapshotChunks.entryBytes(fitted));
      pieces.opened.add(fitted);
    }
    for (BookingChange change : changed.values()) {
      pieces.room(SnapshotChunks.changeBytes(change));
      pieces.changed.add(change);
    }
    for (Rank rank : dirtyRanks) {
      RankRecord record = load.apply(rank);
      if (record != null) {
        pieces.room(SnapshotChunks.rankRecordBytes(record));
        pieces.loads.add(record);
      }
    }
    for (Long nonce : unqueued) {
      pieces.room(SnapshotChunks.unqueuedBytes());
      pieces.unqueued.add(nonce);
    }
    for (QueuedBook book : queued.values()) {
      pieces.room(SnapshotChunks.queuedBytes(book));
      pieces.queued.add(book);
    }
    for (String sessionId : sessionsEnded) {
      pieces.room(SnapshotChunks.sessionEndedBytes(sessionId));
      pieces.sessionsEnded.add(sessionId);
    }
    for (SessionBinding binding : sessions.values()) {
      pieces.room(SnapshotChunks.sessionBytes(binding));
      pieces.sessions.add(binding);
    }
    pieces.cut();
    clearChanges();
    return pieces.deltas;
  }

  /**
   * Forgets what changed since the last drain, as a drain whose deltas reach no peer would (the seq advances by one
   * when anything changed): for an owner with no peer to send to, each peer that appears later starts from a
   * snapshot, so the deltas need not be built.
   */
  public void discard() {
    if (!hasChanges()) {
      return;
    }
    seq++;
    clearChanges();
  }

  private void clearChanges() {
    viewChanged = false;
    dirtyRanks.clear();
    opened.clear();
    changed.clear();
    closed.clear();
    queued.clear();
    freshlyQueued.clear();
    unqueued.clear();
    sessions.clear();
    sessionsEnded.clear();
  }

  /**
   * A delta that changes nothing, as the next seq: sent when a peer has been silent, it lets a peer that missed the
   * last deltas see the gap (and ask for a snapshot) while a peer that is merely slow just acknowledges it. Call it only
   * when {@link #hasChanges} is false (a pending change would be skipped).
   */
  public ReplicaDelta probe(long nowMillis, long highestAttempt) {
    if (hasChanges()) {
      throw new IllegalStateException("drain the pending changes instead of probing");
    }
    return new ReplicaDelta(model, epoch, ++seq, nowMillis, null, List.of(), List.of(), List.of(), List.of(),
        highestAttempt, List.of(), List.of());
  }

  /** The deltas of one drain, filled in order and cut when the next item would pass the budget. */
  private final class Pieces {
    final long nowMillis;
    final long highestAttempt;
    final int maxBytes;
    final List<ReplicaDelta> deltas = new ArrayList<>();
    ViewState view;
    List<ClosedBooking> closed = new ArrayList<>();
    List<LedgerSnapshot.Entry> opened = new ArrayList<>();
    List<BookingChange> changed = new ArrayList<>();
    List<RankRecord> loads = new ArrayList<>();
    List<QueuedBook> queued = new ArrayList<>();
    List<Long> unqueued = new ArrayList<>();
    List<SessionBinding> sessions = new ArrayList<>();
    List<String> sessionsEnded = new ArrayList<>();
    long size;

    Pieces(long nowMillis, long highestAttempt, int maxBytes) {
      this.nowMillis = nowMillis;
      this.highestAttempt = highestAttempt;
      this.maxBytes = maxBytes;
      this.size = SnapshotChunks.deltaBaseBytes(model);
    }

    /** Makes room for an item of {@code bytes}: cuts the current delta first if the item would not fit in it. */
    void room(int bytes) {
      boolean empty = view == null && closed.isEmpty() && opened.isEmpty() && changed.isEmpty() && loads.isEmpty()
          && queued.isEmpty() && unqueued.isEmpty() && sessions.isEmpty() && sessionsEnded.isEmpty();
      if (!empty && size + bytes > maxBytes) {
        cut();
      }
      size += bytes;
    }

    void cut() {
      deltas.add(new ReplicaDelta(model, epoch, ++seq, nowMillis, view, loads, closed, opened, changed,
          highestAttempt, queued, unqueued, sessions, sessionsEnded));
      view = null;
      closed = new ArrayList<>();
      opened = new ArrayList<>();
      changed = new ArrayList<>();
      loads = new ArrayList<>();
      queued = new ArrayList<>();
      unqueued = new ArrayList<>();
      sessions = new ArrayList<>();
      sessionsEnded = new ArrayList<>();
      size = SnapshotChunks.deltaBaseBytes(model);
    }
  }
}
