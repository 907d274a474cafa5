package io.kvrouter.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.BookingChange;
import io.kvrouter.core.admission.ClosedBooking;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.LedgerSnapshot;
import io.kvrouter.core.admission.LoadUpdate;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.admission.RankRecord;
import io.kvrouter.core.admission.ReplicaDelta;
import io.kvrouter.core.admission.ReplicationLog;
import io.kvrouter.core.admission.ViewState;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.Serialization$;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.serialization.jackson.JacksonCborSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The messages every Book crosses nodes with are bound to {@link HotPathSerializer}: each decodes to what was encoded
 * (every field, nulls included), and a delta cut at {@code max-chunk-bytes} by router-core's estimate encodes under
 * it and no larger than Jackson CBOR would.
 */
class HotPathSerializerTest {
  private static final int MAX_CHUNK_BYTES = ReplicationConfig.fromConfig(
      com.typesafe.config.ConfigFactory.load()).maxChunkBytes();
  private static TestCluster cluster;
  private static Serialization serialization;

  @BeforeAll
  static void start() {
    cluster = TestCluster.start(Clock.SYSTEM);
    serialization = SerializationExtension.get(Adapter.toClassic(cluster.kit.system()));
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static Object roundTrip(Object message) {
    Serializer serializer = serialization.findSerializerFor(message);
    assertThat(serializer).as(message.getClass().getSimpleName()).isInstanceOf(HotPathSerializer.class);
    byte[] bytes = serialization.serialize(message).get();
    return serialization.deserialize(bytes, serializer.identifier(), Serializers.manifestFor(serializer, message))
        .get();
  }

  private static void assertRoundTrips(Object message) {
    assertThat(roundTrip(message)).usingRecursiveComparison().isEqualTo(message);
  }

  private static final Rank RANK = new Rank("worker-1", 2);
  private static final SelectionResult SELECTION = new SelectionResult(RANK, "http://10.0.0.1:8000", "eu", 12, 192,
      0.75, new RankLoad(41, 3, 8192, 512), 7, "kv");

  private static LedgerSnapshot.Entry booking(int i, int hashes) {
    long[] sequenceHashes = new long[hashes];
    for (int h = 0; h < hashes; h++) {
      sequenceHashes[h] = 0x9E3779B97F4A7C15L * (i * 31L + h + 1);
    }
    return new LedgerSnapshot.Entry("request-" + i + "-0123456789abcdef", (1_800_000_000_000L << 16) + i, RANK,
        4096, 256, 1_800_000_000_000L, 1500, i % 3 == 0 ? null : SELECTION, sequenceHashes, 0x5DEECE66DL * i,
        i % 2 == 0, 1_800_000_300_000L);
  }

  @Test
  void relayedCallsAndTheirAnswersRoundTrip() {
    ActorRef<ModelAdmission.BookReply> bookReplyTo = cluster.kit.<ModelAdmission.BookReply>createTestProbe().ref();
    ActorRef<ModelAdmission.MutationReply> mutationReplyTo =
        cluster.kit.<ModelAdmission.MutationReply>createTestProbe().ref();
    SelectionRequest everything = new SelectionRequest("org/model-ü", "req-1", new long[] {1, -2, Long.MAX_VALUE},
        512, 64, "worker-1", 2, Set.of("worker-1", "worker-2"), 3, 0.7, 1.5, 0.25);
    SelectionRequest bare = new SelectionRequest("m", "req-2", null, 16, 0, null, null, null, 0, null, null, null);
    assertRoundTrips(new ModelAdmission.Book(everything, 42L, 1_800_000_000_000L, bookReplyTo));
    assertRoundTrips(new ModelAdmission.Book(bare, -1L, 0, bookReplyTo));

    BookingAnswer answer = new BookingAnswer(SELECTION, "req-1", 77, true, 1500, 1_800_000_300_000L, 9);
    assertRoundTrips(new ModelAdmission.BookReply(answer, null));
    assertRoundTrips(new ModelAdmission.BookReply(null, new RoutingError(RoutingError.Code.RESOURCE_EXHAUSTED,
        "QUEUE_FULL", "the queue is full")));

    assertRoundTrips(new ModelAdmission.Release("req-1", 77, mutationReplyTo));
    assertRoundTrips(new ModelAdmission.MutationReply(new MutationResult(true, 1_800_000_300_000L,
        new LoadUpdate(9, RANK, new RankLoad(43, 2, 4096, 256)))));
    assertRoundTrips(new ModelAdmission.MutationReply(MutationResult.NOT_APPLIED));
    assertRoundTrips(new ModelAdmission.MutationReply(new MutationResult(true, 5, null)));
  }

  @Test
  void replicationDeltasAndAcksRoundTrip() {
    ActorRef<ModelAdmission.Command> owner = cluster.kit.<ModelAdmission.Command>createTestProbe().ref();
    ActorRef<ReplicaNode.Command> peer = cluster.kit.<ReplicaNode.Command>createTestProbe().ref();
    ViewState view = new ViewState("m", 9, 4, List.of(TestCluster.worker("worker-1"), TestCluster.worker("w2")),
        "kv", Map.of("seed", "11", "temperature", "0.7"));
    ReplicaDelta full = new ReplicaDelta("m", 9, 12, 1_800_000_000_000L, view,
        List.of(new RankRecord("worker-1", 2, new RankLoad(41, 3, 8192, 512),
            new ReportedLoad(100, 2000, 3, 1_800_000_000_000L)), new RankRecord("w2", 0, null, null)),
        List.of(new ClosedBooking("old", 5)), List.of(booking(1, 0), booking(3, 40)),
        List.of(new BookingChange("older", 4, true, 1_800_000_600_000L)), 1_800_000_000_000L << 16);
    ReplicaDelta empty = new ReplicaDelta("m", 9, 13, 1, null, List.of(), List.of(), List.of(), List.of(), 0);
    assertRoundTrips(new ReplicaNode.Delta(full, owner));
    assertRoundTrips(new ReplicaNode.Delta(empty, owner));
    assertRoundTrips(new ModelAdmission.ReplicaAck(peer, 9, 12));
    // the owner's reference is resolved once and reused: a second decode hands the same reference
    ReplicaNode.Delta again = (ReplicaNode.Delta) roundTrip(new ReplicaNode.Delta(empty, owner));
    assertThat(again.owner()).isEqualTo(owner);
  }

  @Test
  void deltasCutAtMaxChunkBytesEncodeUnderTheEstimateAndUnderJacksonCbor() throws Exception {
    List<WorkerConfig> workers = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      workers.add(TestCluster.worker("worker-with-a-longish-name-" + i));
    }
    ViewState view = new ViewState("big-model", 1_800_000_000_000L, 42, workers, "kv", Map.of("seed", "11"));
    ReplicationLog log = new ReplicationLog("big-model", view.epoch());
    log.viewChanged();
    for (int i = 0; i < 3000; i++) {
      log.opened(booking(i, 1 + (i * 37) % 400));
      log.closed("closed-" + i, i);
      log.rankChanged(workers.get(i % workers.size()).rank(0));
    }
    List<ReplicaDelta> deltas = log.drain(1_800_000_000_000L, () -> view,
        rank -> new RankRecord(rank.workerId(), rank.dpRank(), new RankLoad(9, 4, 1000, 64),
            new ReportedLoad(100, 2000, 3, 1_800_000_000_000L)), 1L << 40, MAX_CHUNK_BYTES);
    assertThat(deltas.size()).as("a burst this large takes several deltas").isGreaterThan(10);

    ActorRef<ModelAdmission.Command> owner = cluster.kit.<ModelAdmission.Command>createTestProbe().ref();
    // the serializer every other CborSerializable message is bound to
    Serializer jackson = serialization.findSerializerFor(new ModelAdmission.Ack(null));
    assertThat(jackson).isInstanceOf(JacksonCborSerializer.class);
    // Jackson writes actor references only with the transport's address at hand, as Artery provides it
    ExtendedActorSystem classic = (ExtendedActorSystem) Adapter.toClassic(cluster.kit.system());
    Serialization.Information transport = new Serialization.Information(classic.provider().getDefaultAddress(),
        classic);
    int opened = 0;
    for (ReplicaDelta delta : deltas) {
      ReplicaNode.Delta message = new ReplicaNode.Delta(delta, owner);
      byte[] bytes = serialization.serialize(message).get();
      byte[] cbor = Serialization$.MODULE$.currentTransportInformation().withValue(transport,
          () -> jackson.toBinary(message));
      assertThat(bytes.length).as("delta %d", delta.seq()).isLessThanOrEqualTo(MAX_CHUNK_BYTES)
          .isLessThanOrEqualTo(cbor.length);
      ReplicaNode.Delta decoded = (ReplicaNode.Delta) roundTrip(message);
      assertThat(decoded.delta()).usingRecursiveComparison().isEqualTo(delta);
      opened += decoded.delta().opened().size();
    }
    assertThat(opened).isEqualTo(3000);
  }
}
