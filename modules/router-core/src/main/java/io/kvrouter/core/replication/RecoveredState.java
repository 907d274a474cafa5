package io.kvrouter.core.replication;

import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import java.util.List;

/**
 * What a new incarnation of a model's admission state recovers from: a replica's copy as of seq of view's epoch,
 * with the Books that were waiting in the old incarnation's queue ({@code queued}: answered, not resumed) and the
 * session bindings ({@code sessions}: kept).
 */
public record RecoveredState(ViewState view, List<RankRecord> loads, LedgerSnapshot ledger, long seq,
    List<QueuedBook> queued, List<SessionBinding> sessions) {

  public RecoveredState {
    loads = List.copyOf(loads);
    queued = List.copyOf(queued);
    sessions = sessions == null ? List.of() : List.copyOf(sessions);
  }

  /** A copy of no session binding. */
  public RecoveredState(ViewState view, List<RankRecord> loads, LedgerSnapshot ledger, long seq,
      List<QueuedBook> queued) {
    this(view, loads, ledger, seq, queued, List.of());
  }

  /** A copy with no queued Book. */
  public RecoveredState(ViewState view, List<RankRecord> loads, LedgerSnapshot ledger, long seq) {
    this(view, loads, ledger, seq, List.of());
  }

  /**
   * The copy a complete set of chunks of one (epoch, seq) carries, in any order.
   *
   * @throws IllegalArgumentException when chunks are missing, repeated or of different copies
   */
  public static RecoveredState of(List<SnapshotChunk> chunks) {
    return SnapshotChunks.assemble(chunks);
  }
}
