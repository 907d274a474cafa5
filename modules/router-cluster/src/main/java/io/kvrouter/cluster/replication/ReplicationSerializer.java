package io.kvrouter.cluster.replication;

import com.google.protobuf.InvalidProtocolBufferException;
import static io.kvrouter.cluster.serialization.ProtoRecords.load;
import static io.kvrouter.cluster.serialization.ProtoRecords.map;
import static io.kvrouter.cluster.serialization.ProtoRecords.rank;
import static io.kvrouter.cluster.serialization.ProtoRecords.selection;

import io.kvrouter.cluster.replication.proto.AckedMessage;
import io.kvrouter.cluster.replication.proto.BookingMessage;
import io.kvrouter.cluster.replication.proto.ChangeMessage;
import io.kvrouter.cluster.replication.proto.ClosedMessage;
import io.kvrouter.cluster.replication.proto.DeltaMessage;
import io.kvrouter.cluster.replication.proto.QueuedMessage;
import io.kvrouter.cluster.replication.proto.RankRecordMessage;
import io.kvrouter.cluster.replication.proto.ReportedLoadMessage;
import io.kvrouter.cluster.replication.proto.SessionMessage;
import io.kvrouter.cluster.serialization.ProtoSerializer;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.replication.BookingChange;
import io.kvrouter.core.replication.ClosedBooking;
import io.kvrouter.core.replication.LedgerSnapshot;
import io.kvrouter.core.replication.QueuedBook;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.SessionBinding;
import java.io.NotSerializableException;
import java.util.List;
import java.util.TreeSet;
import org.apache.pekko.actor.ExtendedActorSystem;

/**
 * Serializes the two messages every replication flush sends, {@link ReplicaActor.Delta} and
 * {@link ReplicaActor.Acked}, as the protobuf messages of {@code replication.proto}: no field names, no reflection,
 * packed hashes (Jackson CBOR spent half of a replicating region's remoting CPU on them: router-bench
 * results/cluster-relay.md). A delta's view, sent only when membership or policy changed, stays Jackson CBOR inside
 * it. Snapshot chunks and recovery messages are rare and stay Jackson CBOR.
 */
public final class ReplicationSerializer extends ProtoSerializer {
  /** Pekko reserves identifiers 0–40. */
  static final int IDENTIFIER = 7301;
  private static final String DELTA = "D";
  private static final String ACKED = "A";

  public ReplicationSerializer(ExtendedActorSystem system) {
    super(system, IDENTIFIER);
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
      throw malformed(manifest, e);
    }
  }

  // ---- Delta

  private DeltaMessage delta(ReplicaActor.Delta message) {
    ReplicaDelta d = message.delta();
    DeltaMessage.Builder b = DeltaMessage.newBuilder()
        .setOwner(resolver().toSerializationFormat(message.owner()))
        .setModel(d.model()).setEpoch(d.epoch()).setSeq(d.seq()).setSentAtMillis(d.sentAtMillis())
        .setHighestAttempt(d.highestAttempt());
    if (d.view() != null) {
      b.setViewCbor(toCbor(d.view()));
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
    ViewState view = m.hasViewCbor() ? fromCbor(m.getViewCbor(), ViewState.class, "view") : null;
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

  // ---- the records a delta carries

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
