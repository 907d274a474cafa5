package io.kvrouter.core.replication;

import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import java.util.List;

/**
 * Chunk {@code index} of {@code count} of a full copy as of (epoch, seq); chunk 0 carries view and loads (null and
 * empty in the others); each chunk's estimated encoded size ({@link SnapshotChunks#estimatedBytes}) stays under the
 * maxChunkBytes it was cut with (a booking's sequence hashes are truncated to what fits: they are advisory).
 * {@code queued}: Books waiting in the owner's queue (after the bookings, in as many chunks as they need);
 * {@code sessions}: the session bindings (after the queued Books, likewise).
 */
public record SnapshotChunk(String model, long epoch, long seq, int index, int count, long sentAtMillis,
    ViewState view, List<RankRecord> loads, List<LedgerSnapshot.Entry> bookings, long highestAttempt,
    List<QueuedBook> queued, List<SessionBinding> sessions) {

  /** A chunk of no session binding. */
  public SnapshotChunk(String model, long epoch, long seq, int index, int count, long sentAtMillis, ViewState view,
      List<RankRecord> loads, List<LedgerSnapshot.Entry> bookings, long highestAttempt, List<QueuedBook> queued) {
    this(model, epoch, seq, index, count, sentAtMillis, view, loads, bookings, highestAttempt, queued, List.of());
  }

  public SnapshotChunk {
    loads = List.copyOf(loads);
    bookings = List.copyOf(bookings);
    queued = List.copyOf(queued);
    sessions = sessions == null ? List.of() : List.copyOf(sessions);
  }
}
