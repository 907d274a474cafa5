package io.kvrouter.core.replication;

import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import java.util.List;

/**
 * What a new incarnation of a model's admission state recovers from: a replica's copy as of seq of view's epoch,
 * with the Books that were waiting in the old incarnation's queue ({@code queued}: answered, not resumed).
 */
public record RecoveredState(ViewState view, List<RankRecord> loads, LedgerSnapshot ledger, long seq,
    List<QueuedBook> queued) {

  public RecoveredState {
    loads = List.copyOf(loads);
    queued = List.copyOf(queued);
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
