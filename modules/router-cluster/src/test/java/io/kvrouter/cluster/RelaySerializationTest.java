package io.kvrouter.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.cluster.admission.BookRelay;
import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.RelaySerializer;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.LoadUpdate;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.admission.SessionOutcome;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.selection.Disaggregation;
import io.kvrouter.core.selection.PlacementConstraints;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SessionAffinity;
import java.io.NotSerializableException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The relayed calls' messages ({@link ModelAdmission.RelayBooks}, {@link ModelAdmission.RelayMutations},
 * {@link BookRelay.Answers}) go through {@link RelaySerializer} (protobuf) and decode to what was sent: a request of
 * the common fields and one with any other field set (carried whole as CBOR), every kind of answer; a malformed
 * payload is refused; and nodes that still send them as CBOR and nodes that send protobuf read each other.
 */
class RelaySerializationTest {
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

  private static long[] hashes(int count, long salt) {
    long[] hashes = new long[count];
    for (int i = 0; i < count; i++) {
      hashes[i] = 0x9E3779B97F4A7C15L * (salt * 31 + i + 1); // negative ones too: fixed64 keeps every bit
    }
    return hashes;
  }

  /** A request of the common fields only. */
  private static SelectionRequest common(String requestId) {
    return new SelectionRequest("llama-3", requestId, hashes(64, requestId.hashCode()), 1000, 128, null, null,
        Set.of(), Set.of(), 3, null, null, null, 0, "gold", 2, null, null, "", Disaggregation.AUTO);
  }

  /** {@code base} with the components SelectionRequest keeps beyond the common ones replaced by {@code change}. */
  private static SelectionRequest with(SelectionRequest base, UnaryOperator<Object[]> change) {
    Object[] c = {base.pinnedWorker(), base.pinnedDpRank(), base.allowedWorkers(), base.excludedWorkers(),
        base.temperature(), base.overlapCredit(), base.prefillLoadScale(), base.strictPriority(), base.session(),
        base.placement(), base.loraName(), base.disaggregation()};
    c = change.apply(c);
    @SuppressWarnings("unchecked")
    SelectionRequest changed = new SelectionRequest(base.model(), base.requestId(), base.blockHashes(),
        base.islTokens(), base.expectedOutputTokens(), (String) c[0], (Integer) c[1], (Set<String>) c[2],
        (Set<String>) c[3], base.priority(), (Double) c[4], (Double) c[5], (Double) c[6], (Integer) c[7],
        base.policyClass(), base.retry(), (SessionAffinity) c[8], (PlacementConstraints) c[9], (String) c[10],
        (Disaggregation) c[11]);
    return changed;
  }

  private static UnaryOperator<Object[]> set(int index, Object value) {
    return c -> {
      c[index] = value;
      return c;
    };
  }

  private static Object roundTrip(Object message) {
    Serializer serializer = serialization.findSerializerFor(message);
    assertThat(serializer).isInstanceOf(RelaySerializer.class);
    byte[] bytes = serialization.serialize(message).get();
    return serialization.deserialize(bytes, serializer.identifier(), Serializers.manifestFor(serializer, message))
        .get();
  }

  private static ActorRef<BookRelay.Answers> endpoint() {
    return cluster.kit.<BookRelay.Answers>createTestProbe().ref();
  }

  @Test
  void relayedBooksOfCommonRequestsDecodeToWhatWasSent() {
    ModelAdmission.RelayBooks books = new ModelAdmission.RelayBooks(endpoint(), List.of(
        new ModelAdmission.RelayedBook(common("r-1"), -42, 1500),
        new ModelAdmission.RelayedBook(common("r-2"), Long.MAX_VALUE, 1)), true);
    ModelAdmission.RelayBooks decoded = (ModelAdmission.RelayBooks) roundTrip(books);
    assertThat(decoded.endpoint()).isEqualTo(books.endpoint());
    assertThat(decoded.wantsAdmission()).isTrue();
    assertThat(decoded.books()).usingRecursiveFieldByFieldElementComparator().isEqualTo(books.books());
    assertThat(decoded.books().get(0).request().blockHashes()).containsExactly(books.books().get(0).request()
        .blockHashes());
  }

  @Test
  void aRequestWithAnyOtherFieldSetDecodesWhole() {
    SelectionRequest base = common("r-other");
    List<SelectionRequest> variants = List.of(
        with(base, set(0, "worker-7")),
        with(base, c -> {
          c[0] = "worker-7";
          c[1] = 3;
          return c;
        }),
        with(base, set(2, Set.of("worker-1", "worker-2"))),
        with(base, set(3, Set.of("worker-3"))),
        with(base, set(4, 0.7)),
        with(base, set(5, 0.5)),
        with(base, set(6, 8.0)),
        with(base, set(7, 2)),
        with(base, set(8, new SessionAffinity("session-1", SessionMode.SOFT, new Rank("worker-2", 1), 0.8))),
        with(base, set(9, new PlacementConstraints(Set.of("gpu=h100"), Set.of("zone=eu"), 0.25))),
        with(base, set(10, "my-adapter")),
        with(base, set(11, Disaggregation.DISAGGREGATED)));
    List<ModelAdmission.RelayedBook> books = new ArrayList<>();
    for (int i = 0; i < variants.size(); i++) {
      books.add(new ModelAdmission.RelayedBook(variants.get(i), i, 1000));
    }
    ModelAdmission.RelayBooks decoded = (ModelAdmission.RelayBooks) roundTrip(
        new ModelAdmission.RelayBooks(endpoint(), books, false));
    assertThat(decoded.wantsAdmission()).isFalse();
    for (int i = 0; i < variants.size(); i++) {
      assertThat(decoded.books().get(i).request()).as("variant %d", i).usingRecursiveComparison()
          .isEqualTo(variants.get(i));
      assertThat(decoded.books().get(i).request()).as("variant %d", i).usingRecursiveComparison()
          .isNotEqualTo(base);
    }
  }

  @Test
  void everySelectionRequestComponentIsEitherCommonOrCoveredByTheFallback() {
    // the common fields (sent as protobuf fields) and the twelve the variants above set (sent as CBOR): a component
    // added to SelectionRequest must join RelaySerializer.hasCommonFieldsOnly's check, and a variant above
    assertThat(SelectionRequest.class.getRecordComponents()).hasSize(8 + 12);
  }

  @Test
  void everyKindOfAnswerDecodesToWhatWasSent() {
    Rank prefill = new Rank("worker-1", 0);
    Rank decode = new Rank("worker-2", 1);
    SelectionResult decodeHalf = new SelectionResult(decode, "10.0.0.2:8000", "eu", 0, 0, 4.5,
        new RankLoad(7, 2, 0, 96), 12, "kv", null);
    SelectionResult pair = new SelectionResult(prefill, "10.0.0.1:8000", "eu", 12, 192, 0.75,
        new RankLoad(9, 4, 1000, 64), 12, "kv", decodeHalf);
    SelectionResult alone = new SelectionResult(prefill, null, null, 0, 0, 1.0, null, 3, null, null);
    List<BookRelay.Answer> answers = List.of(
        new BookRelay.Answer(1, new BookingAnswer(pair, "r-1", 77, false, 1234, 1_800_000_000_000L,
            1_700_000_000_000L, "gold", null), null, null),
        new BookRelay.Answer(2, new BookingAnswer(alone, "r-2", 78, true, 0, 1_800_000_000_001L, 5, "",
            new SessionOutcome("session-1", SessionMode.SOFT, SessionOutcome.Kind.REBOUND, decode)), null, null),
        new BookRelay.Answer(3, null, new RoutingError(RoutingError.Code.RESOURCE_EXHAUSTED, "QUEUE_FULL",
            "the queue is full", Map.of("max_pending", "4096")), null),
        new BookRelay.Answer(4, null, null, new MutationResult(true, 1_800_000_000_002L,
            new LoadUpdate(5, prefill, new RankLoad(10, 3, 500, 32)), new LoadUpdate(5, decode, null))),
        new BookRelay.Answer(5, null, null, new MutationResult(false, 0, null, null)));
    ActorRef<ModelAdmission.Command> admission = cluster.kit.<ModelAdmission.Command>createTestProbe().ref();
    for (BookRelay.Answers message : List.of(new BookRelay.Answers(answers, admission),
        new BookRelay.Answers(answers, null))) {
      BookRelay.Answers decoded = (BookRelay.Answers) roundTrip(message);
      assertThat(decoded.admission()).isEqualTo(message.admission());
      assertThat(decoded.answers()).usingRecursiveFieldByFieldElementComparator().isEqualTo(answers);
    }
  }

  @Test
  void relayedMutationsOfEveryKindDecodeToWhatWasSent() {
    List<ModelAdmission.RelayedMutation> mutations = new ArrayList<>();
    long nonce = Long.MIN_VALUE;
    for (ModelAdmission.MutationKind kind : ModelAdmission.MutationKind.values()) {
      mutations.add(new ModelAdmission.RelayedMutation(kind, "r-" + kind, 1L << 40, nonce++));
    }
    ModelAdmission.RelayMutations message = new ModelAdmission.RelayMutations(endpoint(), mutations, true);
    ModelAdmission.RelayMutations decoded = (ModelAdmission.RelayMutations) roundTrip(message);
    assertThat(decoded.endpoint()).isEqualTo(message.endpoint());
    assertThat(decoded.wantsAdmission()).isTrue();
    assertThat(decoded.mutations()).isEqualTo(mutations);
  }

  @Test
  void aMalformedPayloadOrAnUnknownManifestIsRefused() {
    RelaySerializer serializer = (RelaySerializer) serialization.findSerializerFor(
        new ModelAdmission.RelayMutations(endpoint(), List.of(), false));
    byte[] garbage = {(byte) 0xFF, 0x01, 0x02, 0x03};
    for (String manifest : List.of("B", "M", "A")) {
      assertThatThrownBy(() -> serializer.fromBinary(garbage, manifest)).as(manifest)
          .isInstanceOf(NotSerializableException.class).hasMessageContaining("malformed " + manifest);
    }
    assertThatThrownBy(() -> serializer.fromBinary(new byte[0], "X")).isInstanceOf(NotSerializableException.class)
        .hasMessageContaining("unknown relay manifest");
    // a mutation kind this version does not know (field 1 of the first mutation, field 2 of the message)
    byte[] unknownKind = {0x12, 0x02, 0x08, 0x09};
    assertThatThrownBy(() -> serializer.fromBinary(unknownKind, "M")).isInstanceOf(NotSerializableException.class)
        .hasMessageContaining("unknown relayed mutation kind 9");
    // an answer without an outcome
    byte[] noOutcome = {0x0A, 0x02, 0x08, 0x05};
    assertThatThrownBy(() -> serializer.fromBinary(noOutcome, "A")).isInstanceOf(NotSerializableException.class)
        .hasMessageContaining("has no outcome");
  }

  @Test
  void nodesThatStillSendCborAndNodesThatSendProtobufReadEachOther() {
    TestCluster upgrading = TestCluster.start(Clock.SYSTEM, """
        pekko.actor.serialization-bindings {
          "io.kvrouter.cluster.admission.ModelAdmission$RelayBooks" = jackson-cbor
          "io.kvrouter.cluster.admission.ModelAdmission$RelayMutations" = jackson-cbor
          "io.kvrouter.cluster.admission.BookRelay$Answers" = jackson-cbor
        }
        """);
    try {
      Serialization old = SerializationExtension.get(Adapter.toClassic(upgrading.kit.system()));
      List<ModelAdmission.RelayedBook> books = List.of(new ModelAdmission.RelayedBook(common("r-1"), 9, 1000));
      ModelAdmission.RelayBooks fromOld = new ModelAdmission.RelayBooks(
          upgrading.kit.<BookRelay.Answers>createTestProbe().ref(), books, true);
      Serializer cbor = old.findSerializerFor(fromOld);
      assertThat(cbor).isNotInstanceOf(RelaySerializer.class);
      ModelAdmission.RelayBooks read = (ModelAdmission.RelayBooks) serialization.deserialize(
          old.serialize(fromOld).get(), cbor.identifier(), Serializers.manifestFor(cbor, fromOld)).get();
      assertThat(read.books()).usingRecursiveFieldByFieldElementComparator().isEqualTo(books);

      ModelAdmission.RelayBooks fromNew = new ModelAdmission.RelayBooks(endpoint(), books, true);
      Serializer protobuf = serialization.findSerializerFor(fromNew);
      ModelAdmission.RelayBooks readByOld = (ModelAdmission.RelayBooks) old.deserialize(
          serialization.serialize(fromNew).get(), protobuf.identifier(), Serializers.manifestFor(protobuf, fromNew))
          .get();
      assertThat(readByOld.books()).usingRecursiveFieldByFieldElementComparator().isEqualTo(books);
    } finally {
      upgrading.close();
    }
  }
}
