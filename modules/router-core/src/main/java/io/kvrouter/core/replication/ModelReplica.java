package io.kvrouter.core.replication;

import io.kvrouter.core.membership.Membership;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.sequences.ActivePrefixIndex;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Replica side: this node's copy of one model's admission state, fed by the owner's {@link ReplicaDelta}s and
 * {@link SnapshotChunk}s; one per model per node, single-threaded (the node's replica actor).
 *
 * <p>Publishes a new {@link SelectionView} (through the publisher) when membership/policy change, with its own picker
 * (seeded when the policy names a seed); writes load records into that view's cells in place (booked load
 * seq-guarded, so a relayed answer's newer record is never overwritten by an older one); feeds the node's
 * {@link KvOverlapSource} ({@code onBooked} for opened bookings) and its own {@link ActivePrefixIndex}.
 *
 * <p>Ordering is by (epoch, seq): an older message is {@link Outcome#STALE}; a delta that skips a seq, or one of a
 * newer epoch than this copy's, is a {@link Outcome#GAP} (the owner must send a snapshot); a snapshot's chunks are
 * {@link Outcome#PARTIAL} until all of one (epoch, seq) have arrived (a newer one discards an older partial one).
 */
public final class ModelReplica {
  public enum Outcome { APPLIED, STALE, GAP, PARTIAL }

  private final String model;
  private final long heartbeatTimeoutMillis;
  private final KvOverlapSource overlap;
  private final Consumer<SelectionView> publisher;
  private final ActivePrefixIndex activePrefix = new ActivePrefixIndex();
  /** Null until the first view arrives. */
  private Membership membership;
  private ViewState view;
  /** The epoch and seq of the owner's state this copy holds (0, 0: none yet). */
  private long epoch;
  private long seq;
  private long highestSeqSeen;
  private long lastAppliedAtMillis = -1;
  private boolean awaitingSnapshot;
  private final LinkedHashMap<String, LedgerSnapshot.Entry> bookings = new LinkedHashMap<>();
  private long highestAttempt;
  /** The Books waiting in the owner's queue, by nonce. */
  private final LinkedHashMap<Long, QueuedBook> queued = new LinkedHashMap<>();
  private final List<SnapshotChunk> partial = new ArrayList<>();
  /** The owner's session bindings, by session id. */
  private final LinkedHashMap<String, SessionBinding> sessions = new LinkedHashMap<>();

  public ModelReplica(String model, long heartbeatTimeoutMillis, KvOverlapSource overlap,
      Consumer<SelectionView> publisher) {
    this.model = model;
    this.heartbeatTimeoutMillis = heartbeatTimeoutMillis;
    this.overlap = overlap;
    this.publisher = publisher;
  }

  public String model() {
    return model;
  }

  public long epoch() {
    return epoch;
  }

  public long seq() {
    return seq;
  }

  /** No worker (or nothing received yet). */
  public boolean isEmpty() {
    return view == null || view.workers().isEmpty();
  }

  /** The view this copy publishes, or null before the first one. */
  public SelectionView view() {
    return membership == null ? null : membership.view();
  }

  /** The live bookings this copy holds, by request id. */
  public Map<String, LedgerSnapshot.Entry> bookings() {
    return Collections.unmodifiableMap(bookings);
  }

  /** The Books waiting in the owner's queue, by nonce. */
  public Map<Long, QueuedBook> queued() {
    return Collections.unmodifiableMap(queued);
  }

  /** The owner's session bindings, by session id. */
  public Map<String, SessionBinding> sessions() {
    return Collections.unmodifiableMap(sessions);
  }

  /** Applies the owner's next delta: GAP if it skips a seq or belongs to a newer epoch, STALE if already applied. */
  public Outcome apply(ReplicaDelta delta, long nowMillis) {
    requireModel(delta.model());
    if (delta.epoch() < newestEpoch()) {
      return Outcome.STALE;
    }
    if (delta.epoch() > epoch) {
      awaitingSnapshot = true;
      return Outcome.GAP;
    }
    highestSeqSeen = Math.max(highestSeqSeen, delta.seq());
    if (delta.seq() <= seq) {
      return Outcome.STALE;
    }
    if (delta.seq() != seq + 1) {
      awaitingSnapshot = true;
      return Outcome.GAP;
    }
    if (delta.view() != null) {
      adoptIfNewer(delta.view());
    }
    for (RankRecord load : delta.loads()) {
      write(load);
    }
    for (ClosedBooking closed : delta.closed()) {
      LedgerSnapshot.Entry live = bookings.get(closed.requestId());
      if (live != null && live.attempt() == closed.attempt()) {
        bookings.remove(closed.requestId());
        activePrefix.remove(live.rank(), live.attempt());
      }
    }
    for (LedgerSnapshot.Entry opened : delta.opened()) {
      open(opened, nowMillis);
    }
    for (BookingChange change : delta.changed()) {
      LedgerSnapshot.Entry live = bookings.get(change.requestId());
      if (live != null && live.attempt() == change.attempt()) {
        bookings.put(live.requestId(), live.changed(change));
      }
    }
    for (Long nonce : delta.unqueued()) {
      queued.remove(nonce);
    }
    for (QueuedBook book : delta.queued()) {
      queued.put(book.nonce(), book);
    }
    for (String sessionId : delta.sessionsEnded()) {
      sessions.remove(sessionId);
    }
    for (SessionBinding binding : delta.sessions()) {
      sessions.put(binding.sessionId(), binding);
    }
    highestAttempt = Math.max(highestAttempt, delta.highestAttempt());
    seq = delta.seq();
    lastAppliedAtMillis = nowMillis;
    return Outcome.APPLIED;
  }

  /** Collects one chunk of a full copy; the copy replaces this one once all its chunks are in. */
  public Outcome apply(SnapshotChunk chunk, long nowMillis) {
    requireModel(chunk.model());
    if (chunk.epoch() < newestEpoch() || !SelectionView.isNewer(chunk.epoch(), chunk.seq(), epoch, seq)) {
      return Outcome.STALE;
    }
    if (chunk.epoch() == epoch) {
      highestSeqSeen = Math.max(highestSeqSeen, chunk.seq());
    }
    if (!partial.isEmpty()) {
      SnapshotChunk collecting = partial.get(0);
      if (SelectionView.isNewer(collecting.epoch(), collecting.seq(), chunk.epoch(), chunk.seq())) {
        return Outcome.STALE;
      }
      if (collecting.epoch() != chunk.epoch() || collecting.seq() != chunk.seq()
          || collecting.count() != chunk.count()) {
        partial.clear();
      }
    }
    for (SnapshotChunk held : partial) {
      if (held.index() == chunk.index()) {
        return Outcome.PARTIAL;
      }
    }
    partial.add(chunk);
    if (partial.size() < chunk.count()) {
      return Outcome.PARTIAL;
    }
    RecoveredState copy = RecoveredState.of(partial);
    partial.clear();
    replaceWith(copy, nowMillis);
    return Outcome.APPLIED;
  }

  /** Takes a view relayed with a Register/Deregister/SetPolicy answer, if newer than this copy's. */
  public boolean applyView(ViewState state, long nowMillis) {
    requireModel(state.model());
    if (!state.isNewerThan(view)) {
      return false;
    }
    if (state.epoch() > epoch) {
      awaitingSnapshot = true; // a new incarnation: its bookings and loads come only with a full copy
    }
    adoptIfNewer(state);
    lastAppliedAtMillis = nowMillis;
    return true;
  }

  public Staleness staleness(long nowMillis) {
    return new Staleness(epoch, view == null ? 0 : view.version(), seq, Math.max(0, highestSeqSeen - seq),
        lastAppliedAtMillis < 0 ? 0 : Math.max(0, nowMillis - lastAppliedAtMillis), awaitingSnapshot);
  }

  /** This copy as a new incarnation recovers it; null when it holds no worker. */
  public RecoveredState recoveredState() {
    if (isEmpty()) {
      return null;
    }
    return new RecoveredState(view, membership.rankRecords(),
        new LedgerSnapshot(new ArrayList<>(bookings.values()), highestAttempt), seq, new ArrayList<>(queued.values()),
        new ArrayList<>(sessions.values()));
  }

  /** This copy in chunks (as of its epoch and seq), to hand a recovering actor; empty before the first view. */
  public List<SnapshotChunk> snapshot(long nowMillis, int maxChunkBytes) {
    if (view == null) {
      return List.of();
    }
    return SnapshotChunks.cut(model, epoch, seq, nowMillis, view, membership.rankRecords(),
        new ArrayList<>(bookings.values()), highestAttempt, new ArrayList<>(queued.values()),
        new ArrayList<>(sessions.values()), maxChunkBytes);
  }

  /** Drops what the node's overlap source holds past its time to live (the approximate index's TTL). */
  public void expire(long nowMillis) {
    overlap.expire(nowMillis);
  }

  // ----

  private long newestEpoch() {
    return view == null ? epoch : Math.max(epoch, view.epoch());
  }

  private void requireModel(String other) {
    if (!model.equals(other)) {
      throw new IllegalArgumentException("a message of model '" + other + "' reached the replica of '" + model + "'");
    }
  }

  private void replaceWith(RecoveredState copy, long nowMillis) {
    adoptIfNewer(copy.view());
    if (copy.view().epoch() != epoch) {
      highestSeqSeen = copy.seq();
    }
    epoch = copy.view().epoch();
    seq = copy.seq();
    highestSeqSeen = Math.max(highestSeqSeen, seq);
    for (RankRecord load : copy.loads()) {
      write(load);
    }
    Map<String, LedgerSnapshot.Entry> next = new LinkedHashMap<>();
    for (LedgerSnapshot.Entry booking : copy.ledger().bookings()) {
      next.put(booking.requestId(), booking);
    }
    for (LedgerSnapshot.Entry held : new ArrayList<>(bookings.values())) {
      LedgerSnapshot.Entry kept = next.get(held.requestId());
      if (kept == null || kept.attempt() != held.attempt()) {
        bookings.remove(held.requestId());
        activePrefix.remove(held.rank(), held.attempt());
      }
    }
    for (LedgerSnapshot.Entry booking : next.values()) {
      open(booking, nowMillis);
    }
    highestAttempt = Math.max(highestAttempt, copy.ledger().highestAttempt());
    queued.clear();
    for (QueuedBook book : copy.queued()) {
      queued.put(book.nonce(), book);
    }
    sessions.clear();
    for (SessionBinding binding : copy.sessions()) {
      sessions.put(binding.sessionId(), binding);
    }
    awaitingSnapshot = false;
    lastAppliedAtMillis = nowMillis;
  }

  /** Records a live booking; a booking new to this copy teaches the active-prefix index and the overlap source. */
  private void open(LedgerSnapshot.Entry booking, long nowMillis) {
    LedgerSnapshot.Entry previous = bookings.put(booking.requestId(), booking);
    if (previous != null && previous.attempt() == booking.attempt()) {
      return;
    }
    if (previous != null) {
      activePrefix.remove(previous.rank(), previous.attempt());
    }
    activePrefix.add(booking.rank(), booking.attempt(), booking.sequenceHashes());
    overlap.onBooked(booking.rank(), booking.sequenceHashes(), nowMillis);
    if (booking.selection() != null && booking.selection().decode() != null) {
      overlap.onBooked(booking.selection().decode().rank(), booking.sequenceHashes(), nowMillis); // a pair's decode rank
    }
  }

  private void write(RankRecord record) {
    LoadCell cell = membership == null ? null : membership.cell(record.rank());
    if (cell == null) {
      return;
    }
    if (record.booked() != null) {
      cell.apply(record.booked());
    }
    cell.report(record.reported()); // null too: the worker may have left and come back within one delta
  }

  private void adoptIfNewer(ViewState state) {
    if (!state.isNewerThan(view)) {
      return;
    }
    if (membership == null) {
      membership = Membership.of(state, heartbeatTimeoutMillis, overlap, activePrefix, publisher, Membership.Changes.NONE);
      membership.publish();
    } else {
      for (String removed : membership.adopt(state)) {
        activePrefix.removeWorker(removed);
        overlap.removeWorker(removed);
      }
    }
    view = state;
  }
}
