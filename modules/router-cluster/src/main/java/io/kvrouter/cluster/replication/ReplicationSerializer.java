package io.kvrouter.cluster.replication;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.kvrouter.cluster.replication.proto.AckedMessage;
import io.kvrouter.cluster.replication.proto.BookingMessage;
import io.kvrouter.cluster.replication.proto.ChangeMessage;
import io.kvrouter.cluster.replication.proto.ClosedMessage;
import io.kvrouter.cluster.replication.proto.DeltaMessage;
import io.kvrouter.cluster.replication.proto.QueuedMessage;
import io.kvrouter.cluster.replication.proto.RankLoadMessage;
import io.kvrouter.cluster.replication.proto.RankMessage;
import io.kvrouter.cluster.replication.proto.RankRecordMessage;
import io.kvrouter.cluster.replication.proto.ReportedLoadMessage;
import io.kvrouter.cluster.replication.proto.SelectionMessage;
import io.kvrouter.cluster.replication.proto.SessionMessage;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.replication.BookingChange;
import io.kvrouter.core.replication.ClosedBooking;
import io.kvrouter.core.replication.LedgerSnapshot;
import io.kvrouter.core.replication.QueuedBook;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.SessionBinding;
import io.kvrouter.core.selection.SelectionResult;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Function;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializerWithStringManifest;
import org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider;

/**
 * Serializes the two messages every replication flush sends, {@link ReplicaActor.Delta} and
 * {@link ReplicaActor.Acked}, as the protobuf messages of {@code replication.proto}: no field names, no reflection,
 * packed hashes (Jackson CBOR spent half of a replicating region's remoting CPU on them: router-bench
 * results/cluster-relay.md). A delta's view, sent only when membership or policy changed, stays Jackson CBOR inside
 * it. Snapshot chunks and recovery messages are rare and stay Jackson CBOR.
 */
public final class ReplicationSerializer extends SerializerWithStringManifest {
  /** Pekko reserves identifiers 0–40. */
  static final int IDENTIFIER = 7301;
  private static final String DELTA = "D";
  private static final String ACKED = "A";

  private final ExtendedActorSystem system;
  private volatile ActorRefResolver resolver;
  private volatile ObjectMapper viewMapper;

  public ReplicationSerializer(ExtendedActorSystem system) {
    this.system = system;
  }

  @Override
  public int identifier() {
    return IDENTIFIER;
  }

  @Override
  public String manifest(Object message) {
    if (message instanceof ReplicaActor.Delta) {
      return DELTA;
    }
    if (message instanceof ReplicaActor.Acked) {
      return ACKED;
    }
    throw new IllegalArgumentException("not a replication message: " + message.getClass().getName());
  }

  @Override
  public byte[] toBinary(Object message) {
    if (message instanceof ReplicaActor.Delta delta) {
      return delta(delta).toByteArray();
    }
    if (message instanceof ReplicaActor.Acked acked) {
      return AckedMessage.newBuilder().setPeer(resolver().toSerializationFormat(acked.peer()))
          .setEpoch(acked.epoch()).setSeq(acked.seq()).build().toByteArray();
    }
    throw new IllegalArgumentException("not a replication message: " + message.getClass().getName());
  }

  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
    try {
      return switch (manifest) {
        case DELTA -> delta(DeltaMessage.parseFrom(bytes));
        case ACKED -> {
          AckedMessage m = AckedMessage.parseFrom(bytes);
          yield new ReplicaActor.Acked(resolver().resolveActorRef(m.getPeer()), m.getEpoch(), m.getSeq());
        }
        default -> throw new NotSerializableException("unknown replication manifest '" + manifest + "'");
      };
    } catch (InvalidProtocolBufferException e) {
      NotSerializableException failure = new NotSerializableException("malformed " + manifest + ": " + e.getMessage());
      failure.initCause(e);
      throw failure;
    }
  }

  private ActorRefResolver resolver() {
    ActorRefResolver r = resolver;
    if (r == null) {
      r = ActorRefResolver.get(Adapter.toTyped(system));
      resolver = r;
    }
    return r;
  }

  /** The mapper Pekko's jackson-cbor binding uses (kvrouter's records as arrays). */
  private ObjectMapper viewMapper() {
    ObjectMapper m = viewMapper;
    if (m == null) {
      m = JacksonObjectMapperProvider.get(system).getOrCreate("jackson-cbor", Optional.empty());
      viewMapper = m;
    }
    return m;
  }

  // ---- Delta

  private DeltaMessage delta(ReplicaActor.Delta message) {
    ReplicaDelta d = message.delta();
    DeltaMessage.Builder b = DeltaMessage.newBuilder()
        .setOwner(resolver().toSerializationFormat(message.owner()))
        .setModel(d.model()).setEpoch(d.epoch()).setSeq(d.seq()).setSentAtMillis(d.sentAtMillis())
        .setHighestAttempt(d.highestAttempt());
    if (d.view() != null) {
      try {
        b.setViewCbor(ByteString.copyFrom(viewMapper().writeValueAsBytes(d.view())));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    d.loads().forEach(load -> b.addLoads(rankRecord(load)));
    d.closed().forEach(c -> b.addClosed(ClosedMessage.newBuilder().setRequestId(c.requestId())
        .setAttempt(c.attempt())));
    d.opened().forEach(entry -> b.addOpened(booking(entry)));
    d.changed().forEach(c -> b.addChanged(ChangeMessage.newBuilder().setRequestId(c.requestId())
        .setAttempt(c.attempt()).setPrefillDone(c.prefillDone()).setLeaseExpiresAtMillis(c.leaseExpiresAtMillis())
        .addAllNonces(c.nonces()).setRetry(c.retry())));
    d.queued().forEach(q -> b.addQueued(QueuedMessage.newBuilder().setRequestId(q.requestId()).setNonce(q.nonce())
        .setReplyTo(q.replyTo()).setPolicyClass(q.policyClass()).setEnqueuedAtMillis(q.enqueuedAtMillis())));
    b.addAllUnqueued(d.unqueued());
    d.sessions().forEach(s -> b.addSessions(SessionMessage.newBuilder().setSessionId(s.sessionId())
        .setRank(rank(s.rank())).setBoundAtMillis(s.boundAtMillis()).setLastUsedMillis(s.lastUsedMillis())
        .setExpiresAtMillis(s.expiresAtMillis())));
    b.addAllSessionsEnded(d.sessionsEnded());
    return b.build();
  }

  private ReplicaActor.Delta delta(DeltaMessage m) throws NotSerializableException {
    ViewState view = null;
    if (m.hasViewCbor()) {
      try {
        view = viewMapper().readValue(m.getViewCbor().toByteArray(), ViewState.class);
      } catch (IOException e) {
        NotSerializableException failure = new NotSerializableException("malformed view: " + e.getMessage());
        failure.initCause(e);
        throw failure;
      }
    }
    ReplicaDelta delta = new ReplicaDelta(m.getModel(), m.getEpoch(), m.getSeq(), m.getSentAtMillis(), view,
        map(m.getLoadsList(), ReplicationSerializer::rankRecord),
        map(m.getClosedList(), c -> new ClosedBooking(c.getRequestId(), c.getAttempt())),
        map(m.getOpenedList(), ReplicationSerializer::booking),
        map(m.getChangedList(), c -> new BookingChange(c.getRequestId(), c.getAttempt(), c.getPrefillDone(),
            c.getLeaseExpiresAtMillis(), c.getNoncesList(), c.getRetry())),
        m.getHighestAttempt(),
        map(m.getQueuedList(), q -> new QueuedBook(q.getRequestId(), q.getNonce(), q.getReplyTo(),
            q.getPolicyClass(), q.getEnqueuedAtMillis())),
        m.getUnqueuedList(),
        map(m.getSessionsList(), s -> new SessionBinding(s.getSessionId(), rank(s.getRank()),
            s.getBoundAtMillis(), s.getLastUsedMillis(), s.getExpiresAtMillis())),
        m.getSessionsEndedList());
    return new ReplicaActor.Delta(delta, resolver().resolveActorRef(m.getOwner()));
  }

  private static <P, T> List<T> map(List<P> messages, Function<P, T> read) {
    List<T> values = new ArrayList<>(messages.size());
    for (P message : messages) {
      values.add(read.apply(message));
    }
    return values;
  }

  // ---- the records a delta carries

  private static RankMessage rank(Rank rank) {
    return RankMessage.newBuilder().setWorkerId(rank.workerId()).setDpRank(rank.dpRank()).build();
  }

  private static Rank rank(RankMessage m) {
    return new Rank(m.getWorkerId(), m.getDpRank());
  }

  private static RankLoadMessage load(RankLoad load) {
    return RankLoadMessage.newBuilder().setSeq(load.seq()).setInFlight(load.inFlight())
        .setPrefillTokens(load.prefillTokens()).setDecodeBlocks(load.decodeBlocks())
        .setRecentBookings(load.recentBookings()).setRecentAtMillis(load.recentAtMillis()).build();
  }

  private static RankLoad load(RankLoadMessage m) {
    return new RankLoad(m.getSeq(), m.getInFlight(), m.getPrefillTokens(), m.getDecodeBlocks(),
        m.getRecentBookings(), m.getRecentAtMillis());
  }

  private static RankRecordMessage rankRecord(RankRecord record) {
    RankRecordMessage.Builder b = RankRecordMessage.newBuilder().setWorkerId(record.workerId())
        .setDpRank(record.dpRank());
    if (record.booked() != null) {
      b.setBooked(load(record.booked()));
    }
    ReportedLoad r = record.reported();
    if (r != null) {
      b.setReported(ReportedLoadMessage.newBuilder().setDecodeBlocks(r.decodeBlocks())
          .setPrefillTokens(r.prefillTokens()).setWaitingRequests(r.waitingRequests())
          .setReportedAtMillis(r.reportedAtMillis()).addAllLoraAdapters(r.loraAdapters()));
    }
    return b.build();
  }

  private static RankRecord rankRecord(RankRecordMessage m) {
    ReportedLoad reported = null;
    if (m.hasReported()) {
      ReportedLoadMessage r = m.getReported();
      reported = new ReportedLoad(r.getDecodeBlocks(), r.getPrefillTokens(), r.getWaitingRequests(),
          r.getReportedAtMillis(), new TreeSet<>(r.getLoraAdaptersList()));
    }
    return new RankRecord(m.getWorkerId(), m.getDpRank(), m.hasBooked() ? load(m.getBooked()) : null, reported);
  }

  private static SelectionMessage selection(SelectionResult s) {
    SelectionMessage.Builder b = SelectionMessage.newBuilder().setRank(rank(s.rank()))
        .setOverlapBlocks(s.overlapBlocks()).setCachedTokens(s.cachedTokens()).setCost(s.cost())
        .setViewVersion(s.viewVersion());
    if (s.endpoint() != null) {
      b.setEndpoint(s.endpoint());
    }
    if (s.region() != null) {
      b.setRegion(s.region());
    }
    if (s.policy() != null) {
      b.setPolicy(s.policy());
    }
    if (s.load() != null) {
      b.setLoad(load(s.load()));
    }
    if (s.decode() != null) {
      b.setDecode(selection(s.decode()));
    }
    return b.build();
  }

  private static SelectionResult selection(SelectionMessage m) {
    return new SelectionResult(rank(m.getRank()), m.hasEndpoint() ? m.getEndpoint() : null,
        m.hasRegion() ? m.getRegion() : null, m.getOverlapBlocks(), m.getCachedTokens(), m.getCost(),
        m.hasLoad() ? load(m.getLoad()) : null, m.getViewVersion(), m.hasPolicy() ? m.getPolicy() : null,
        m.hasDecode() ? selection(m.getDecode()) : null);
  }

  private static BookingMessage booking(LedgerSnapshot.Entry e) {
    BookingMessage.Builder b = BookingMessage.newBuilder().setRequestId(e.requestId()).setAttempt(e.attempt())
        .setRank(rank(e.rank())).setPrefillTokens(e.prefillTokens()).setDecodeBlocks(e.decodeBlocks())
        .setBookedAtMillis(e.bookedAtMillis()).setQueuedMicros(e.queuedMicros()).addAllNonces(e.nonces())
        .setRetry(e.retry()).setPrefillDone(e.prefillDone()).setLeaseExpiresAtMillis(e.leaseExpiresAtMillis())
        .setPolicyClass(e.policyClass());
    if (e.selection() != null) {
      b.setSelection(selection(e.selection()));
    }
    if (e.sequenceHashes() != null) {
      for (long hash : e.sequenceHashes()) {
        b.addSequenceHashes(hash);
      }
    }
    return b.build();
  }

  private static LedgerSnapshot.Entry booking(BookingMessage m) {
    long[] hashes = new long[m.getSequenceHashesCount()];
    for (int i = 0; i < hashes.length; i++) {
      hashes[i] = m.getSequenceHashes(i);
    }
    return new LedgerSnapshot.Entry(m.getRequestId(), m.getAttempt(), rank(m.getRank()), m.getPrefillTokens(),
        m.getDecodeBlocks(), m.getBookedAtMillis(), m.getQueuedMicros(),
        m.hasSelection() ? selection(m.getSelection()) : null, hashes, m.getNoncesList(), m.getRetry(),
        m.getPrefillDone(), m.getLeaseExpiresAtMillis(), m.getPolicyClass());
  }
}
