package io.kvrouter.cluster;

import io.kvrouter.cluster.replication.ReplicaActor;
import io.kvrouter.cluster.replication.ReplicationConfig;
import io.kvrouter.cluster.replication.ReplicationSerializer;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import io.kvrouter.core.replication.BookingChange;
import io.kvrouter.core.replication.ClosedBooking;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.replication.LedgerSnapshot;
import io.kvrouter.core.replication.QueuedBook;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.SessionBinding;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.replication.SnapshotChunks;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.selection.SelectionResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Snapshot chunks, cut by router-core's size estimate at {@code max-chunk-bytes}, encoded by the real serializer they
 * cross nodes with (Jackson CBOR, inside {@link ReplicaActor.Chunk}): each stays under the estimate, so under Artery's
 * 256 KiB frame, and decodes back to what was cut (bookings, queued Books and session bindings); a delta of session
 * bindings likewise. Deltas and acknowledgements go through {@link ReplicationSerializer} (protobuf): every kind of
 * change a delta carries decodes to what was sent, and a malformed payload is refused.
 */
class ReplicationSerializationTest {
  private static final int FRAME = 256 * 1024;
  private static final int MAX_CHUNK_BYTES = ReplicationConfig.fromConfig(
      com.typesafe.config.ConfigFactory.load()).maxChunkBytes();
  private static TestCluster cluster;

  @BeforeAll
  static void start() {
    cluster = TestCluster.start(Clock.SYSTEM);
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static List<WorkerConfig> workers(int count) {
    List<WorkerConfig> workers = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      WorkerConfig worker = TestCluster.worker("worker-with-a-longish-name-" + i);
      if (i % 2 == 0) {
        // every other worker carries placement taints, which travel with the view too
        worker = worker.withTaints(java.util.Set.of("gpu=h100", "zone=eu-west-1"));
      }
      // every third worker declares LoRA adapters, which travel with the view
      workers.add(i % 3 == 0 ? worker.withLoraAdapters(java.util.Set.of("adapter-" + i, "adapter-shared")) : worker);
    }
    return workers;
  }

  private static LedgerSnapshot.Entry booking(int i, WorkerConfig worker, int hashes) {
    Rank rank = worker.rank(0);
    long[] sequenceHashes = new long[hashes];
    for (int h = 0; h < hashes; h++) {
      sequenceHashes[h] = 0x9E3779B97F4A7C15L * (i * 31L + h + 1);
    }
    SelectionResult selection = new SelectionResult(rank, worker.endpoint(), "local", 12, 192, 0.75,
        new RankLoad(i + 1, 3, 8192, 512), 7, "kv");
    if (i % 2 == 1) {
      // a prefill/decode pair: the decode half's answer travels inside the prefill half's
      Rank decode = new Rank("decode-worker-with-a-longish-name-" + i % 7, 0);
      selection = selection.withDecode(new SelectionResult(decode, "http://decode-" + i % 7 + ":8000", "local", 0, 0,
          33.0, new RankLoad(i + 2, 5, 0, 4096), 7, "kv"));
    }
    return new LedgerSnapshot.Entry("request-" + i + "-0123456789abcdef", (1_800_000_000_000L << 16) + i, rank,
        4096, 256, 1_800_000_000_000L, 1500, selection, sequenceHashes, 0x5DEECE66DL * i, i % 2 == 0,
        1_800_000_300_000L);
  }

  private static List<SessionBinding> sessions(List<WorkerConfig> workers, int count) {
    List<SessionBinding> sessions = new ArrayList<>();
    String padding = "s".repeat(240);
    for (int i = 0; i < count; i++) {
      sessions.add(new SessionBinding(padding + i, workers.get(i % workers.size()).rank(0),
          1_800_000_000_000L + i, 1_800_000_100_000L + i, 1_800_000_700_000L + i));
    }
    return sessions;
  }

  @Test
  void aDeltaOfSessionBindingsEncodesUnderItsEstimate() throws Exception {
    List<WorkerConfig> workers = workers(8);
    List<SessionBinding> bound = sessions(workers, 500);
    List<String> ended = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      ended.add("ended-session-" + i + "-" + "e".repeat(200));
    }
    ReplicaDelta delta = new ReplicaDelta("big-model", 1_800_000_000_000L, 5, 1_800_000_000_000L, null, List.of(),
        List.of(), List.of(), List.of(), 77, List.of(), List.of(), bound, ended);
    Serialization serialization = SerializationExtension.get(Adapter.toClassic(cluster.kit.system()));
    ActorRef<ReplicaActor.Reply> owner = cluster.kit.<ReplicaActor.Reply>createTestProbe().ref();
    ReplicaActor.Delta message = new ReplicaActor.Delta(delta, owner);
    byte[] bytes = serialization.serialize(message).get();
    assertThat(bytes.length).isLessThanOrEqualTo(SnapshotChunks.estimatedBytes(delta) + 256);
    ReplicaActor.Delta decoded = (ReplicaActor.Delta) serialization.deserialize(bytes,
        serialization.findSerializerFor(message).identifier(),
        Serializers.manifestFor(serialization.findSerializerFor(message), message)).get();
    assertThat(decoded.delta().sessions()).isEqualTo(bound);
    assertThat(decoded.delta().sessionsEnded()).isEqualTo(ended);
  }

  @Test
  void aDeltaOfEveryKindOfChangeAndItsAcknowledgementRoundTripThroughTheReplicationSerializer() throws Exception {
    List<WorkerConfig> workers = workers(6);
    ViewState view = new ViewState("m", 1_800_000_000_000L, 42, workers, "kv", Map.of("seed", "11"));
    List<RankRecord> loads = List.of(
        new RankRecord(workers.get(0).workerId(), 0, new RankLoad(9, 4, 1000, 64, 2.5, 1_800_000_000_100L),
            ReportedLoad.of(100, 2000, 3, 1_800_000_000_000L, java.util.Set.of("adapter-a", "adapter-b"))),
        new RankRecord(workers.get(1).workerId(), 1, new RankLoad(10, 0, 0, 0), null));
    List<LedgerSnapshot.Entry> opened = List.of(booking(0, workers.get(0), 32), booking(1, workers.get(1), 0));
    ReplicaDelta delta = new ReplicaDelta("m", 1_800_000_000_000L, 5, 1_800_000_000_200L, view, loads,
        List.of(new ClosedBooking("closed-request", 77)), opened,
        List.of(new BookingChange("changed-request", 78, true, 1_800_000_400_000L, List.of(5L, -6L), 2)), 79,
        List.of(new QueuedBook("queued-request", -12, "pekko://kvrouter@127.0.0.1:25520/temp/a#1", "gold", 3)),
        List.of(13L, 14L), sessions(workers, 2), List.of("ended-session"));
    Serialization serialization = SerializationExtension.get(Adapter.toClassic(cluster.kit.system()));
    ActorRef<ReplicaActor.Reply> owner = cluster.kit.<ReplicaActor.Reply>createTestProbe().ref();
    ReplicaActor.Delta message = new ReplicaActor.Delta(delta, owner);
    assertThat(serialization.findSerializerFor(message)).isInstanceOf(ReplicationSerializer.class);
    ReplicaActor.Delta decoded = (ReplicaActor.Delta) roundTrip(serialization, message);
    assertThat(decoded.owner()).isEqualTo(owner);
    assertThat(decoded.delta()).usingRecursiveComparison().isEqualTo(delta);
    assertThat(decoded.delta().opened().get(1).selection().decode()).isNotNull();

    ReplicaDelta withoutView = new ReplicaDelta("m", 1, 6, 2, null, List.of(), List.of(), List.of(), List.of(), 0,
        List.of(), List.of());
    assertThat(((ReplicaActor.Delta) roundTrip(serialization, new ReplicaActor.Delta(withoutView, owner))).delta())
        .usingRecursiveComparison().isEqualTo(withoutView);

    ActorRef<ReplicaActor.Command> peer = cluster.kit.<ReplicaActor.Command>createTestProbe().ref();
    ReplicaActor.Acked acked = new ReplicaActor.Acked(peer, 1_800_000_000_000L, 5);
    assertThat(serialization.findSerializerFor(acked)).isInstanceOf(ReplicationSerializer.class);
    assertThat(roundTrip(serialization, acked)).isEqualTo(acked);
  }

  @Test
  void aMalformedDeltaIsRefused() {
    Serialization serialization = SerializationExtension.get(Adapter.toClassic(cluster.kit.system()));
    ReplicaDelta delta = new ReplicaDelta("m", 1, 1, 2, null, List.of(), List.of(), List.of(), List.of(), 0,
        List.of(), List.of());
    ReplicaActor.Delta message = new ReplicaActor.Delta(delta, cluster.kit.<ReplicaActor.Reply>createTestProbe().ref());
    org.apache.pekko.serialization.Serializer serializer = serialization.findSerializerFor(message);
    byte[] bytes = serialization.serialize(message).get();
    byte[] truncated = java.util.Arrays.copyOf(bytes, bytes.length - 1);
    assertThatThrownBy(() -> serialization.deserialize(truncated, serializer.identifier(),
        Serializers.manifestFor(serializer, message)).get()).isInstanceOf(java.io.NotSerializableException.class);
    assertThatThrownBy(() -> serialization.deserialize(bytes, serializer.identifier(), "no-such-manifest").get())
        .isInstanceOf(java.io.NotSerializableException.class);
  }

  /**
   * The first step of the rolling upgrade the README describes: with the old binding kept in config a node sends its
   * deltas as Jackson CBOR, which a node of the default binding decodes to what was sent, and it decodes that node's
   * protobuf deltas.
   */
  @Test
  void withTheOldBindingKeptDeltasGoAsCborAndNodesOfEitherBindingReadEachOthersDeltas() {
    TestCluster upgrading = TestCluster.start(Clock.SYSTEM, """
        pekko.actor.serialization-bindings {
          "io.kvrouter.cluster.replication.ReplicaActor$Delta" = jackson-cbor
          "io.kvrouter.cluster.replication.ReplicaActor$Acked" = jackson-cbor
        }
        """);
    try {
      Serialization sender = SerializationExtension.get(Adapter.toClassic(upgrading.kit.system()));
      Serialization receiver = SerializationExtension.get(Adapter.toClassic(cluster.kit.system()));
      List<WorkerConfig> workers = workers(2);
      ReplicaDelta delta = new ReplicaDelta("m", 1_800_000_000_000L, 3, 1_800_000_000_200L, null, List.of(),
          List.of(new ClosedBooking("closed-request", 7)), List.of(booking(0, workers.get(0), 4)), List.of(), 8,
          List.of(), List.of(), sessions(workers, 1), List.of());
      ReplicaActor.Delta message = new ReplicaActor.Delta(delta,
          upgrading.kit.<ReplicaActor.Reply>createTestProbe().ref());
      org.apache.pekko.serialization.Serializer cbor = sender.findSerializerFor(message);
      assertThat(cbor).isNotInstanceOf(ReplicationSerializer.class);
      assertThat(receiver.findSerializerFor(message)).isInstanceOf(ReplicationSerializer.class);
      ReplicaActor.Delta decoded = (ReplicaActor.Delta) receiver.deserialize(sender.serialize(message).get(),
          cbor.identifier(), Serializers.manifestFor(cbor, message)).get();
      assertThat(decoded.delta()).usingRecursiveComparison().isEqualTo(delta);

      // and the upgrading node reads what a node of the new binding sends (it has the serializer, unbound)
      ReplicaActor.Delta fromNew =
          new ReplicaActor.Delta(delta, cluster.kit.<ReplicaActor.Reply>createTestProbe().ref());
      org.apache.pekko.serialization.Serializer protobuf = receiver.findSerializerFor(fromNew);
      ReplicaActor.Delta read = (ReplicaActor.Delta) sender.deserialize(receiver.serialize(fromNew).get(),
          protobuf.identifier(), Serializers.manifestFor(protobuf, fromNew)).get();
      assertThat(read.delta()).usingRecursiveComparison().isEqualTo(delta);
    } finally {
      upgrading.close();
    }
  }

  private static Object roundTrip(Serialization serialization, Object message) {
    org.apache.pekko.serialization.Serializer serializer = serialization.findSerializerFor(message);
    byte[] bytes = serialization.serialize(message).get();
    return serialization.deserialize(bytes, serializer.identifier(), Serializers.manifestFor(serializer, message))
        .get();
  }

  @Test
  void everyChunkCutAtMaxChunkBytesEncodesUnderItsEstimateAndTheFrame() throws Exception {
    List<WorkerConfig> workers = workers(64);
    ViewState view = new ViewState("big-model", 1_800_000_000_000L, 42, workers, "kv",
        Map.of("seed", "11", "temperature", "0.7"));
    List<RankRecord> loads = new ArrayList<>();
    for (WorkerConfig worker : workers) {
      loads.add(new RankRecord(worker.workerId(), 0, new RankLoad(9, 4, 1000, 64),
          new ReportedLoad(100, 2000, 3, 1_800_000_000_000L)));
    }
    List<LedgerSnapshot.Entry> bookings = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      bookings.add(booking(i, workers.get(i % workers.size()), 1 + (i * 37) % 400));
    }
    // one booking whose hashes alone exceed a chunk: its hashes are truncated to fit
    bookings.add(booking(3000, workers.get(0), 40_000));
    // and a full queue, each Book with the reply address it waits at
    List<QueuedBook> queued = new ArrayList<>();
    for (int i = 0; i < 4096; i++) {
      queued.add(new QueuedBook("queued-request-" + i + "-0123456789abcdef", 0x5DEECE66DL * -i,
          "pekko://kvrouter@127.0.0.1:25520/temp/RouterCluster$a" + i + "#-1234567890", "tenant-gold",
          1_800_000_000_000L + i));
    }

    // and the most session bindings a model may hold, at their longest ids
    List<SessionBinding> sessions = sessions(workers, 20_000);

    List<SnapshotChunk> chunks = SnapshotChunks.cut("big-model", view.epoch(), 17, 1_800_000_000_000L, view, loads,
        bookings, bookings.get(bookings.size() - 1).attempt(), queued, sessions, MAX_CHUNK_BYTES);
    assertThat(chunks.size()).as("a copy this large takes several chunks").isGreaterThan(10);

    Serialization serialization = SerializationExtension.get(Adapter.toClassic(cluster.kit.system()));
    ActorRef<ReplicaActor.Reply> owner = cluster.kit.<ReplicaActor.Reply>createTestProbe().ref();
    int bookingsDecoded = 0;
    int queuedDecoded = 0;
    boolean adaptersSeen = false;
    boolean taintedSeen = false;
    int sessionsDecoded = 0;
    for (SnapshotChunk chunk : chunks) {
      ReplicaActor.Chunk message = new ReplicaActor.Chunk(chunk, owner);
      byte[] bytes = serialization.serialize(message).get();
      assertThat(Serializers.manifestFor(serialization.findSerializerFor(message), message)).isNotEmpty();
      assertThat(bytes.length).as("chunk %d of %d", chunk.index(), chunk.count())
          .isLessThanOrEqualTo(MAX_CHUNK_BYTES + 256).isLessThan(FRAME);
      ReplicaActor.Chunk decoded = (ReplicaActor.Chunk) serialization.deserialize(bytes,
          serialization.findSerializerFor(message).identifier(),
          Serializers.manifestFor(serialization.findSerializerFor(message), message)).get();
      assertThat(decoded.chunk().index()).isEqualTo(chunk.index());
      assertThat(decoded.chunk().bookings()).hasSameSizeAs(chunk.bookings());
      assertThat(decoded.chunk().queued()).isEqualTo(chunk.queued());
      for (int b = 0; b < chunk.bookings().size(); b++) {
        assertThat(decoded.chunk().bookings().get(b).selection()).isEqualTo(chunk.bookings().get(b).selection());
      }
      if (chunk.view() != null) {
        assertThat(decoded.chunk().view().workers()).isEqualTo(chunk.view().workers());
        adaptersSeen |= chunk.view().workers().stream().anyMatch(w -> !w.loraAdapters().isEmpty());
        taintedSeen |= chunk.view().workers().stream().anyMatch(w -> !w.taints().isEmpty());
      }
      bookingsDecoded += decoded.chunk().bookings().size();
      queuedDecoded += decoded.chunk().queued().size();
      assertThat(decoded.chunk().sessions()).isEqualTo(chunk.sessions());
      sessionsDecoded += decoded.chunk().sessions().size();
    }
    assertThat(sessionsDecoded).isEqualTo(sessions.size());
    assertThat(bookingsDecoded).isEqualTo(bookings.size());
    assertThat(adaptersSeen).as("a view with LoRA adapters was decoded").isTrue();
    assertThat(taintedSeen).as("a view with placement taints was decoded").isTrue();
    assertThat(queuedDecoded).isEqualTo(queued.size());
  }
}
