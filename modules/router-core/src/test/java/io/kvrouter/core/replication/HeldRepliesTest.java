package io.kvrouter.core.replication;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Answers held until enough peers acknowledged the delta that carries their changes. */
class HeldRepliesTest {
  private final List<String> sent = new ArrayList<>();
  private final HeldReplies held = new HeldReplies();

  @Test
  void aReplyGoesOutOnlyOnceTheSeqItWasSealedUnderIsAcknowledged() {
    held.hold(() -> sent.add("a"));
    held.hold(() -> sent.add("b"));
    assertThat(held.hasUnsealed()).isTrue();
    assertThat(held.release(100)).as("not sealed yet: no flush carried the changes").isZero();
    held.seal(5);
    assertThat(held.awaitingAcks()).isTrue();
    held.hold(() -> sent.add("c"));
    held.seal(7);
    assertThat(held.release(4)).isZero();
    assertThat(held.release(5)).isEqualTo(2);
    assertThat(sent).containsExactly("a", "b");
    assertThat(held.size()).isEqualTo(1);
    assertThat(held.release(9)).isEqualTo(1);
    assertThat(sent).containsExactly("a", "b", "c");
    assertThat(held.awaitingAcks()).isFalse();
  }

  @Test
  void repliesSealedUnderTheSameSeqTravelTogetherAndStoppingDropsTheRest() {
    held.hold(() -> sent.add("a"));
    held.seal(3);
    held.hold(() -> sent.add("b"));
    held.seal(3);
    held.hold(() -> sent.add("c"));
    assertThat(held.release(3)).isEqualTo(2);
    assertThat(held.dropAll()).isEqualTo(1);
    held.seal(4);
    assertThat(held.release(Long.MAX_VALUE)).isZero();
    assertThat(sent).containsExactly("a", "b");
  }

  @Test
  void theSeqAcknowledgedByAtLeastSoManyPeersIsTheirKthHighest() {
    ReplicationSender<String> sender = new ReplicationSender<>(300, 128 * 1024);
    ReplicationSender.Source source = new ReplicationSender.Source() {
      long seq;

      @Override
      public long epoch() {
        return 1;
      }

      @Override
      public long replicationSeq() {
        return seq;
      }

      @Override
      public List<ReplicaDelta> drainReplicaDeltas(long nowMillis, int maxBytes) {
        return List.of();
      }

      @Override
      public void discardReplicaDeltas() {}

      @Override
      public ReplicaDelta replicaProbe(long nowMillis) {
        return null;
      }

      @Override
      public List<SnapshotChunk> replicaSnapshot(long nowMillis, int maxChunkBytes) {
        return List.of();
      }
    };
    ReplicationSender.Transport<String> nowhere = new ReplicationSender.Transport<>() {
      @Override
      public void delta(String peer, ReplicaDelta delta) {}

      @Override
      public void chunk(String peer, SnapshotChunk chunk) {}
    };
    sender.flush(source, Set.of("p1", "p2", "p3"), 0, nowhere); // every peer new: a snapshot each
    assertThat(sender.ackedByAtLeast(0)).isEqualTo(Long.MAX_VALUE);
    assertThat(sender.ackedByAtLeast(1)).isZero();
    sender.acked("p1", 1, 9, 1, 0);
    sender.acked("p2", 1, 4, 1, 0);
    sender.acked("p3", 2, 99, 1, 0); // another epoch's ack counts for nothing
    assertThat(sender.ackedByAtLeast(1)).isEqualTo(9);
    assertThat(sender.ackedByAtLeast(2)).isEqualTo(4);
    assertThat(sender.ackedByAtLeast(3)).isZero();
    assertThat(sender.ackedByAtLeast(4)).as("fewer peers than asked for").isZero();
  }
}
