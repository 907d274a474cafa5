package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.cluster.replication.ReplicaActor;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.admission.Clock;
import java.time.Duration;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The owner's side of the replication stream, seen by a peer the test plays (a probe registered under the region's
 * replica key): a new peer gets a snapshot, then deltas; a peer that leaves a delta unacknowledged gets no snapshot
 * for it (a slow peer sent the whole ledger again only fell further behind) but, once nothing else is pending, an
 * empty delta of the next seq after {@code resend-after}; a peer that reports a gap gets a snapshot.
 */
class ReplicationProtocolTest {
  private static final Duration WAIT = Duration.ofSeconds(5);
  private static TestCluster cluster;

  @BeforeAll
  static void start() {
    cluster = TestCluster.start(Clock.SYSTEM, "kvrouter.replication.resend-after = 200ms");
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  /** The next full snapshot the owner sends the peer (its last chunk), skipping deltas. */
  private static ReplicaActor.Chunk nextSnapshot(TestProbe<ReplicaActor.Command> peer) {
    return (ReplicaActor.Chunk) peer.fishForMessage(WAIT, message ->
        message instanceof ReplicaActor.Chunk chunk && chunk.chunk().index() == chunk.chunk().count() - 1
            ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore()).get(0);
  }

  @Test
  void aNewPeerGetsASnapshotASilentPeerAnEmptyDeltaAndAGappedPeerASnapshot() {
    TestProbe<ReplicaActor.Command> peer = cluster.kit.createTestProbe();
    String region = Cluster.get(cluster.kit.system()).selfMember().dataCenter();
    cluster.kit.system().receptionist().tell(Receptionist.register(ReplicaActor.serviceKey(region), peer.getRef()));
    ModelClient client = cluster.modelWithWorkers("protocol", "round_robin", "w1");

    ReplicaActor.Chunk first = nextSnapshot(peer);
    assertThat(first.chunk().model()).isEqualTo("protocol");
    assertThat(first.chunk().view().workers()).hasSize(1);

    // a change reaches the peer as a delta; left unacknowledged, it is followed by an empty delta (the next seq),
    // never by a snapshot
    join(client.register(TestCluster.worker("w2"), null));
    ReplicaActor.Delta delta = (ReplicaActor.Delta) peer.fishForMessage(WAIT, message ->
        message instanceof ReplicaActor.Delta d && d.delta().view() != null
            && d.delta().view().workers().size() == 2 ? FishingOutcomes.complete()
            : FishingOutcomes.continueAndIgnore()).get(0);
    assertThat(delta.delta().seq()).isGreaterThan(first.chunk().seq());
    ReplicaActor.Delta probe = (ReplicaActor.Delta) peer.fishForMessage(WAIT, message -> {
      if (message instanceof ReplicaActor.Chunk) {
        return FishingOutcomes.fail("a silent peer was sent a snapshot");
      }
      return message instanceof ReplicaActor.Delta d && d.delta().seq() > delta.delta().seq()
          && d.delta().view() == null && d.delta().loads().isEmpty() && d.delta().opened().isEmpty()
          ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore();
    }).get(0);
    assertThat(probe.delta().closed()).isEmpty();
    assertThat(probe.delta().changed()).isEmpty();

    // the peer acknowledges everything, then reports a gap: a snapshot follows
    ActorRef<ReplicaActor.Reply> owner = probe.owner();
    owner.tell(new ReplicaActor.Acked(peer.getRef(), probe.delta().epoch(), probe.delta().seq()));
    join(client.setPolicy("least_in_flight", Map.of(), null));
    ReplicaActor.Delta policy = (ReplicaActor.Delta) peer.fishForMessage(WAIT, message ->
        message instanceof ReplicaActor.Delta d && d.delta().view() != null
            && d.delta().view().policy().equals("least_in_flight") ? FishingOutcomes.complete()
            : FishingOutcomes.continueAndIgnore()).get(0);
    owner.tell(new ReplicaActor.Acked(peer.getRef(), policy.delta().epoch(), policy.delta().seq()));
    owner.tell(new ReplicaActor.SnapshotWanted(peer.getRef(), policy.delta().epoch()));
    ReplicaActor.Chunk healed = (ReplicaActor.Chunk) peer.fishForMessage(WAIT, message ->
        message instanceof ReplicaActor.Chunk chunk && chunk.chunk().seq() >= policy.delta().seq()
            ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore()).get(0);
    assertThat(healed.chunk().view().policy()).isEqualTo("least_in_flight");
  }
}
