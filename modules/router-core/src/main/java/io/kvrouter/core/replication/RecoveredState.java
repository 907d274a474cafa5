package io.kvrouter.core.replication;

import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import java.util.List;

/** What a new incarnation of a model's admission state recovers from: a replica's copy as of seq of view's epoch. */
public record RecoveredState(ViewState view, List<RankRecord> loads, LedgerSnapshot ledger, long seq) {

  public RecoveredState {
    loads = List.copyOf(loads);
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
