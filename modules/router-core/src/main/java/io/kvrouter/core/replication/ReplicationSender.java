package io.kvrouter.core.replication;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The owner's side of replication: what each flush sends to which peer, and what each peer has acknowledged. A peer
 * that is in step gets the deltas drained since the last flush; a peer that is new to this incarnation or reported a
 * gap gets a full snapshot (at most one per {@code resend-after}, twice that after a snapshot it did not answer, and
 * so on up to 32 times: a dead peer is not sent a full copy every few hundred ms until it is removed).
 *
 * <p>A peer that has left a delta unacknowledged for {@code resend-after} is not sent a snapshot on that ground alone:
 * it is most often merely slow (a burst of Books fills its inbound stream), and a copy of the whole ledger made it
 * slower still (relayed Books, whose answers queue behind it on the same connection, stalled for seconds). Later
 * deltas reach it anyway, and when nothing changed, an empty delta as the next seq ({@link Source#replicaProbe},
 * backed off like snapshots): a peer that missed a delta then sees the gap and asks.
 *
 * <p>Not thread-safe: the owner's actor calls it.
 *
 * @param <P> how a peer is addressed (its replica actor's reference)
 */
public final class ReplicationSender<P> {
  /** What the sender reads from the owner's state. */
  public interface Source {
    long epoch();

    /** The seq of the last delta drained. */
    long replicationSeq();

    /** What changed since the last drain, in deltas of at most {@code maxBytes} (estimated) each. */
    List<ReplicaDelta> drainReplicaDeltas(long nowMillis, int maxBytes);

    /** Forgets what changed since the last drain, the seq advanced as by a drain (no peer would get the deltas). */
    void discardReplicaDeltas();

    /** An empty delta as the next seq. */
    ReplicaDelta replicaProbe(long nowMillis);

    /** The whole state as of the last delta, in chunks of at most {@code maxChunkBytes} (estimated) each. */
    List<SnapshotChunk> replicaSnapshot(long nowMillis, int maxChunkBytes);
  }

  /** How the sender reaches a peer. */
  public interface Transport<P> {
    void delta(P peer, ReplicaDelta delta);

    void chunk(P peer, SnapshotChunk chunk);
  }

  /** What this incarnation sent one peer and what the peer acknowledged (seqs of this epoch). */
  private static final class PeerProgress {
    long sentSeq;
    long ackedSeq;
    /** When the oldest delta not yet acknowledged was sent; 0 when all are. */
    long waitingSinceMillis;
    long snapshotSentAtMillis;
    /** Snapshots sent since the peer last answered; each doubles the wait before the next. */
    int unansweredSnapshots;
    boolean wantsSnapshot;
    long probeSentAtMillis;
    /** Probes sent since the peer last answered; each doubles the wait before the next. */
    int unansweredProbes;

    boolean maySnapshot(long nowMillis, long resendAfterMillis) {
      return nowMillis - snapshotSentAtMillis >= resendAfterMillis << Math.min(unansweredSnapshots, 5);
    }

    /** Silent for {@code resend-after} with a delta unacknowledged, and not probed within its backoff. */
    boolean wantsProbe(long nowMillis, long resendAfterMillis) {
      return sentSeq > ackedSeq && nowMillis - waitingSinceMillis >= resendAfterMillis
          && nowMillis - probeSentAtMillis >= resendAfterMillis << Math.min(unansweredProbes, 5);
    }

    void sent(long seq, long nowMillis) {
      if (sentSeq <= ackedSeq) {
        waitingSinceMillis = nowMillis;
      }
      sentSeq = Math.max(sentSeq, seq);
    }
  }

  private final Map<P, PeerProgress> peers = new HashMap<>();
  private final long resendAfterMillis;
  private final int maxChunkBytes;

  /**
   * @param resendAfterMillis {@code kvrouter.replication.resend-after}
   * @param maxChunkBytes the estimated size no replication message exceeds
   */
  public ReplicationSender(long resendAfterMillis, int maxChunkBytes) {
    this.resendAfterMillis = resendAfterMillis;
    this.maxChunkBytes = maxChunkBytes;
  }

  /**
   * Sends what changed since the last flush to every listed peer that is in step, a probe to silent ones, and a
   * snapshot (as of this flush's deltas) to peers that are new or asked for one. Peers no longer listed are
   * forgotten; with none listed the changes are discarded unbuilt, since a peer listed later is new and gets a
   * snapshot.
   */
  public void flush(Source source, Set<P> listed, long now, Transport<P> transport) {
    if (listed.isEmpty()) {
      peers.clear();
      source.discardReplicaDeltas();
      return;
    }
    List<ReplicaDelta> deltas = source.drainReplicaDeltas(now, maxChunkBytes);
    peers.keySet().retainAll(listed);
    if (deltas.isEmpty() && peers.values().stream().anyMatch(p -> p.wantsProbe(now, resendAfterMillis))) {
      deltas = List.of(source.replicaProbe(now));
      for (PeerProgress progress : peers.values()) {
        if (progress.wantsProbe(now, resendAfterMillis)) {
          progress.probeSentAtMillis = now;
          progress.unansweredProbes++;
        }
      }
    }
    List<P> behind = new ArrayList<>();
    for (P peer : listed) {
      PeerProgress progress = peers.get(peer);
      if (progress == null || (progress.wantsSnapshot && progress.maySnapshot(now, resendAfterMillis))) {
        behind.add(peer);
      } else if (!deltas.isEmpty()) {
        for (ReplicaDelta delta : deltas) {
          transport.delta(peer, delta);
        }
        progress.sent(source.replicationSeq(), now);
      }
    }
    if (behind.isEmpty()) {
      return;
    }
    List<SnapshotChunk> chunks = source.replicaSnapshot(now, maxChunkBytes);
    for (P peer : behind) {
      chunks.forEach(chunk -> transport.chunk(peer, chunk));
      PeerProgress progress = peers.computeIfAbsent(peer, p -> new PeerProgress());
      progress.wantsSnapshot = false;
      progress.snapshotSentAtMillis = now;
      progress.unansweredSnapshots++;
      progress.sent(source.replicationSeq(), now);
    }
  }

  /** {@code peer} applied everything up to {@code seq} of {@code epoch} ({@code currentEpoch}: the owner's). */
  public void acked(P peer, long epoch, long seq, long currentEpoch, long now) {
    PeerProgress progress = peers.get(peer);
    if (progress != null && epoch == currentEpoch && seq > progress.ackedSeq) {
      progress.ackedSeq = seq;
      progress.unansweredSnapshots = 0;
      progress.unansweredProbes = 0;
      // the peer made progress: its next wait starts now
      progress.waitingSinceMillis = progress.ackedSeq >= progress.sentSeq ? 0 : now;
    }
  }

  /**
   * The highest seq of this epoch that at least {@code peers} of the listed peers acknowledged ({@code peers} 0: every
   * seq, {@link Long#MAX_VALUE}); 0 when fewer peers acknowledged anything.
   */
  public long ackedByAtLeast(int peers) {
    if (peers <= 0) {
      return Long.MAX_VALUE;
    }
    if (this.peers.size() < peers) {
      return 0;
    }
    long[] acked = new long[this.peers.size()];
    int i = 0;
    for (PeerProgress progress : this.peers.values()) {
      acked[i++] = progress.ackedSeq;
    }
    java.util.Arrays.sort(acked);
    return acked[acked.length - peers];
  }

  /**
   * {@code peer} reported a gap in {@code epoch}: it gets a snapshot at a coming flush. Returns whether the owner
   * should flush soon (the report is of its epoch).
   */
  public boolean snapshotWanted(P peer, long epoch, long currentEpoch) {
    PeerProgress progress = peers.get(peer);
    if (progress != null && epoch == currentEpoch) {
      progress.wantsSnapshot = true;
      progress.unansweredSnapshots = 0;
      return true;
    }
    return false;
  }
}
