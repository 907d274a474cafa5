package io.kvrouter.core.replication;

import io.kvrouter.core.admission.LedgerSnapshot;
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
public final class ReplicationLog {
  private final String model;
  private final long epoch;
  private long seq;
  private boolean enabled = true;
  private boolean viewChanged;
  private final LinkedHashSet<Rank> dirtyRanks = new LinkedHashSet<>();
  /** Bookings opened this interval, by request id, as they are now (a later change is folded in). */
  private final LinkedHashMap<String, LedgerSnapshot.Entry> opened = new LinkedHashMap<>();
  /** Changes to bookings opened in an earlier interval, by request id (the last one wins). */
  private final LinkedHashMap<String, BookingChange> changed = new LinkedHashMap<>();
  private final List<ClosedBooking> closed = new ArrayList<>();

  public ReplicationLog(String model, long epoch) {
    this.model = model;
    this.epoch = epoch;
  }

  public long epoch() {
    return epoch;
  }

  /** The seq of the last delta drained (0: none yet in this epoch). */
  public long seq() {
    return seq;
  }

  /**
   * Whether changes are recorded (on by default). Off, nothing is recorded and {@link #drain} answers null: for
   * measuring what replication costs the owner. Switching it off drops what was pending.
   */
  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean on) {
    if (!on) {
      viewChanged = false;
      dirtyRanks.clear();
      opened.clear();
      changed.clear();
      closed.clear();
    }
    enabled = on;
  }

  public boolean hasChanges() {
    return viewChanged || !dirtyRanks.isEmpty() || !opened.isEmpty() || !changed.isEmpty() || !closed.isEmpty();
  }

  /** Membership, configs or policy changed (a new view was published). */
  public void viewChanged() {
    viewChanged = enabled;
  }

  /** A rank's booked load or reported load changed. */
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
      opened.put(change.requestId(), new LedgerSnapshot.Entry(fresh.requestId(), fresh.attempt(), fresh.rank(),
          fresh.prefillTokens(), fresh.decodeBlocks(), fresh.bookedAtMillis(), fresh.queuedMicros(),
          fresh.selection(), fresh.sequenceHashes(), fresh.nonce(), change.prefillDone(),
          change.leaseExpiresAtMillis()));
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
   * The next delta, or null when nothing changed since the last one.
   *
   * @param view the current membership/policy (read only if it changed)
   * @param load the current record of a rank, or null if the rank no longer exists
   * @param highestAttempt the highest attempt the ledger issued
   */
  public ReplicaDelta drain(long nowMillis, Supplier<ViewState> view, Function<Rank, RankRecord> load,
      long highestAttempt) {
    if (!hasChanges()) {
      return null;
    }
    List<RankRecord> loads = new ArrayList<>(dirtyRanks.size());
    for (Rank rank : dirtyRanks) {
      RankRecord record = load.apply(rank);
      if (record != null) {
        loads.add(record);
      }
    }
    ReplicaDelta delta = new ReplicaDelta(model, epoch, ++seq, nowMillis, viewChanged ? view.get() : null, loads,
        closed, new ArrayList<>(opened.values()), new ArrayList<>(changed.values()), highestAttempt);
    viewChanged = false;
    dirtyRanks.clear();
    opened.clear();
    changed.clear();
    closed.clear();
    return delta;
  }
}
