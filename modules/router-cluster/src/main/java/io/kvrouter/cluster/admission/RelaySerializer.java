package io.kvrouter.cluster.admission;

import static io.kvrouter.cluster.serialization.ProtoRecords.load;
import static io.kvrouter.cluster.serialization.ProtoRecords.rank;
import static io.kvrouter.cluster.serialization.ProtoRecords.selection;

import com.google.protobuf.InvalidProtocolBufferException;
import io.kvrouter.cluster.admission.proto.AnswerMessage;
import io.kvrouter.cluster.admission.proto.AnswersMessage;
import io.kvrouter.cluster.admission.proto.BookedMessage;
import io.kvrouter.cluster.admission.proto.LoadUpdateMessage;
import io.kvrouter.cluster.admission.proto.MutatedMessage;
import io.kvrouter.cluster.admission.proto.RelayBooksMessage;
import io.kvrouter.cluster.admission.proto.RelayMutationsMessage;
import io.kvrouter.cluster.admission.proto.RelayedBookMessage;
import io.kvrouter.cluster.admission.proto.RelayedMutationMessage;
import io.kvrouter.cluster.serialization.ProtoSerializer;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.LoadUpdate;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.admission.SessionOutcome;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.selection.Disaggregation;
import io.kvrouter.core.selection.SelectionRequest;
import java.io.NotSerializableException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.pekko.actor.ExtendedActorSystem;

/**
 * Serializes the messages of every relayed call ({@link BookRelay}): {@link ModelAdmission.RelayBooks},
 * {@link ModelAdmission.RelayMutations} and {@link BookRelay.Answers}, as the protobuf messages of
 * {@code relay.proto}: no field names, no reflection, block hashes packed as fixed 8 bytes each. A request with
 * anything beyond the common fields (a pin, worker sets, overrides, a session, placement, a LoRA adapter, a
 * disaggregation mode), a refusal and a session outcome are carried as Jackson CBOR inside it, so every request and
 * answer survives whole.
 */
public final class RelaySerializer extends ProtoSerializer {
  /** Pekko reserves identifiers 0–40; 7301 is ReplicationSerializer's. */
  static final int IDENTIFIER = 7302;
  private static final String BOOKS = "B";
  private static final String MUTATIONS = "M";
  private static final String ANSWERS = "A";
  private static final ModelAdmission.MutationKind[] KINDS = ModelAdmission.MutationKind.values();

  public RelaySerializer(ExtendedActorSystem system) {
    super(system, IDENTIFIER);
  }

  @Override
  public String manifest(Object message) {
    if (message instanceof ModelAdmission.RelayBooks) {
      return BOOKS;
    }
    if (message instanceof ModelAdmission.RelayMutations) {
      return MUTATIONS;
    }
    if (message instanceof BookRelay.Answers) {
      return ANSWERS;
    }
    throw new IllegalArgumentException("not a relay message: " + message.getClass().getName());
  }

  @Override
  public byte[] toBinary(Object message) {
    if (message instanceof ModelAdmission.RelayBooks books) {
      RelayBooksMessage.Builder b = RelayBooksMessage.newBuilder()
          .setEndpoint(resolver().toSerializationFormat(books.endpoint())).setWantsAdmission(books.wantsAdmission());
      books.books().forEach(book -> b.addBooks(book(book)));
      return b.build().toByteArray();
    }
    if (message instanceof ModelAdmission.RelayMutations mutations) {
      RelayMutationsMessage.Builder b = RelayMutationsMessage.newBuilder()
          .setEndpoint(resolver().toSerializationFormat(mutations.endpoint()))
          .setWantsAdmission(mutations.wantsAdmission());
      mutations.mutations().forEach(m -> b.addMutations(RelayedMutationMessage.newBuilder()
          .setKind(m.kind().ordinal()).setRequestId(m.requestId()).setAttempt(m.attempt()).setNonce(m.nonce())));
      return b.build().toByteArray();
    }
    if (message instanceof BookRelay.Answers answers) {
      AnswersMessage.Builder b = AnswersMessage.newBuilder();
      if (answers.admission() != null) {
        b.setAdmission(resolver().toSerializationFormat(answers.admission()));
      }
      answers.answers().forEach(answer -> b.addAnswers(answer(answer)));
      return b.build().toByteArray();
    }
    throw new IllegalArgumentException("not a relay message: " + message.getClass().getName());
  }

  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
    try {
      return switch (manifest) {
        case BOOKS -> {
          RelayBooksMessage m = RelayBooksMessage.parseFrom(bytes);
          List<ModelAdmission.RelayedBook> books = new ArrayList<>(m.getBooksCount());
          for (RelayedBookMessage book : m.getBooksList()) {
            books.add(new ModelAdmission.RelayedBook(request(book), book.getNonce(), book.getTimeoutMillis()));
          }
          yield new ModelAdmission.RelayBooks(resolver().resolveActorRef(m.getEndpoint()), books,
              m.getWantsAdmission());
        }
        case MUTATIONS -> {
          RelayMutationsMessage m = RelayMutationsMessage.parseFrom(bytes);
          List<ModelAdmission.RelayedMutation> mutations = new ArrayList<>(m.getMutationsCount());
          for (RelayedMutationMessage mutation : m.getMutationsList()) {
            mutations.add(new ModelAdmission.RelayedMutation(kind(mutation.getKind()), mutation.getRequestId(),
                mutation.getAttempt(), mutation.getNonce()));
          }
          yield new ModelAdmission.RelayMutations(resolver().resolveActorRef(m.getEndpoint()), mutations,
              m.getWantsAdmission());
        }
        case ANSWERS -> {
          AnswersMessage m = AnswersMessage.parseFrom(bytes);
          List<BookRelay.Answer> answers = new ArrayList<>(m.getAnswersCount());
          for (AnswerMessage answer : m.getAnswersList()) {
            answers.add(answer(answer));
          }
          yield new BookRelay.Answers(answers, m.hasAdmission() ? resolver().resolveActorRef(m.getAdmission()) : null);
        }
        default -> throw new NotSerializableException("unknown relay manifest '" + manifest + "'");
      };
    } catch (InvalidProtocolBufferException e) {
      throw malformed(manifest, e);
    }
  }

  // ---- a relayed Book's request

  private RelayedBookMessage book(ModelAdmission.RelayedBook book) {
    RelayedBookMessage.Builder b = RelayedBookMessage.newBuilder().setNonce(book.nonce())
        .setTimeoutMillis(book.timeoutMillis());
    SelectionRequest r = book.request();
    if (!hasCommonFieldsOnly(r)) {
      return b.setRequestCbor(toCbor(r)).build();
    }
    b.setModel(r.model()).setRequestId(r.requestId()).setIslTokens(r.islTokens())
        .setExpectedOutputTokens(r.expectedOutputTokens()).setPriority(r.priority())
        .setPolicyClass(r.policyClass()).setRetry(r.retry());
    for (long hash : r.blockHashes()) {
      b.addBlockHashes(hash);
    }
    return b.build();
  }

  /** Whether every field but the common ones is at SelectionRequest's default. */
  static boolean hasCommonFieldsOnly(SelectionRequest r) {
    return r.pinnedWorker() == null && r.pinnedDpRank() == null && r.allowedWorkers().isEmpty()
        && r.excludedWorkers().isEmpty() && r.temperature() == null && r.overlapCredit() == null
        && r.prefillLoadScale() == null && r.strictPriority() == 0 && r.session() == null && r.placement() == null
        && r.loraName().isEmpty() && r.disaggregation() == Disaggregation.AUTO;
  }

  private SelectionRequest request(RelayedBookMessage m) throws NotSerializableException {
    if (m.hasRequestCbor()) {
      return fromCbor(m.getRequestCbor(), SelectionRequest.class, "relayed request");
    }
    long[] hashes = new long[m.getBlockHashesCount()];
    for (int i = 0; i < hashes.length; i++) {
      hashes[i] = m.getBlockHashes(i);
    }
    return new SelectionRequest(m.getModel(), m.getRequestId(), hashes, m.getIslTokens(),
        m.getExpectedOutputTokens(), null, null, Set.of(), Set.of(), m.getPriority(), null, null, null, 0,
        m.getPolicyClass(), m.getRetry(), null, null, "", Disaggregation.AUTO);
  }

  private static ModelAdmission.MutationKind kind(int ordinal) throws NotSerializableException {
    if (ordinal < 0 || ordinal >= KINDS.length) {
      throw new NotSerializableException("unknown relayed mutation kind " + ordinal);
    }
    return KINDS[ordinal];
  }

  // ---- answers

  private AnswerMessage answer(BookRelay.Answer answer) {
    AnswerMessage.Builder b = AnswerMessage.newBuilder().setNonce(answer.nonce());
    if (answer.booked() != null) {
      BookingAnswer a = answer.booked();
      BookedMessage.Builder booked = BookedMessage.newBuilder().setSelection(selection(a.selection()))
          .setRequestId(a.requestId()).setAttempt(a.attempt()).setReplay(a.replay())
          .setQueuedMicros(a.queuedMicros()).setLeaseExpiresAtMillis(a.leaseExpiresAtMillis()).setEpoch(a.epoch())
          .setPolicyClass(a.policyClass());
      if (a.session() != null) {
        booked.setSessionCbor(toCbor(a.session()));
      }
      b.setBooked(booked);
    } else if (answer.refused() != null) {
      b.setRefusedCbor(toCbor(answer.refused()));
    } else {
      MutationResult r = answer.mutated();
      MutatedMessage.Builder mutated = MutatedMessage.newBuilder().setApplied(r.applied())
          .setLeaseExpiresAtMillis(r.leaseExpiresAtMillis());
      if (r.load() != null) {
        mutated.setLoad(loadUpdate(r.load()));
      }
      if (r.decodeLoad() != null) {
        mutated.setDecodeLoad(loadUpdate(r.decodeLoad()));
      }
      b.setMutated(mutated);
    }
    return b.build();
  }

  private BookRelay.Answer answer(AnswerMessage m) throws NotSerializableException {
    return switch (m.getOutcomeCase()) {
      case BOOKED -> {
        BookedMessage a = m.getBooked();
        SessionOutcome session = a.hasSessionCbor()
            ? fromCbor(a.getSessionCbor(), SessionOutcome.class, "session outcome") : null;
        yield new BookRelay.Answer(m.getNonce(), new BookingAnswer(selection(a.getSelection()), a.getRequestId(),
            a.getAttempt(), a.getReplay(), a.getQueuedMicros(), a.getLeaseExpiresAtMillis(), a.getEpoch(),
            a.getPolicyClass(), session), null, null);
      }
      case REFUSED_CBOR -> new BookRelay.Answer(m.getNonce(), null,
          fromCbor(m.getRefusedCbor(), RoutingError.class, "refusal"), null);
      case MUTATED -> {
        MutatedMessage r = m.getMutated();
        yield new BookRelay.Answer(m.getNonce(), null, null, new MutationResult(r.getApplied(),
            r.getLeaseExpiresAtMillis(), r.hasLoad() ? loadUpdate(r.getLoad()) : null,
            r.hasDecodeLoad() ? loadUpdate(r.getDecodeLoad()) : null));
      }
      case OUTCOME_NOT_SET -> throw new NotSerializableException("relayed answer " + m.getNonce() + " has no outcome");
    };
  }

  private static LoadUpdateMessage loadUpdate(LoadUpdate update) {
    LoadUpdateMessage.Builder b = LoadUpdateMessage.newBuilder().setEpoch(update.epoch()).setRank(rank(update.rank()));
    if (update.load() != null) {
      b.setLoad(load(update.load()));
    }
    return b.build();
  }

  private static LoadUpdate loadUpdate(LoadUpdateMessage m) {
    return new LoadUpdate(m.getEpoch(), rank(m.getRank()), m.hasLoad() ? load(m.getLoad()) : null);
  }
}
