package io.kvrouter.cluster;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.BookingChange;
import io.kvrouter.core.admission.ClosedBooking;
import io.kvrouter.core.admission.LedgerSnapshot;
import io.kvrouter.core.admission.LoadUpdate;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.admission.RankRecord;
import io.kvrouter.core.admission.ReplicaDelta;
import io.kvrouter.core.admission.ViewState;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializerWithStringManifest;
import org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider;

/**
 * A hand-written binary encoding of the messages every Book crosses nodes with: a relayed Book and its answer, a
 * relayed Release and its answer, and the replication deltas and their acknowledgements (every few ms per peer).
 * Jackson CBOR spent most of a relayed Book's CPU decoding these (field names, property-based record creation, an
 * actor path parsed per reference); here each is a fixed sequence of fields, a string repeated within a message is
 * written once, the stable references a delta or an ack carries are resolved once, and a delta sent to several peers
 * is encoded once. The rare parts (a delta's new view) stay Jackson CBOR inside. Everything else keeps
 * {@link CborSerializable}'s Jackson binding.
 *
 * <p>The encoding is never larger than Jackson CBOR's (no field names), so router-core's size estimate
 * ({@code SnapshotChunks}), which cuts deltas under {@code max-chunk-bytes}, stays an upper bound.
 */
public final class HotPathSerializer extends SerializerWithStringManifest {
  private static final String DELTA = "D";
  private static final String ACK = "A";
  private static final String BOOK = "B";
  private static final String BOOK_REPLY = "BR";
  private static final String RELEASE = "R";
  private static final String MUTATION_REPLY = "MR";
  /** Stable references (owners, replica actors) resolved once: resolving parses the actor path. Bounded. */
  private static final int MAX_CACHED_REFS = 1024;

  private final ExtendedActorSystem system;
  private volatile ActorRefResolver resolver;
  private volatile ObjectMapper cbor;
  private final ConcurrentHashMap<String, ActorRef<?>> stableRefs = new ConcurrentHashMap<>();
  /**
   * The last deltas encoded, by seq: the owner sends the same delta to every peer, and each peer's outbound stream
   * would encode it again. Slots hold (delta, owner, bytes); a miss or a race only costs an encoding.
   */
  private final AtomicReferenceArray<EncodedDelta> recentDeltas = new AtomicReferenceArray<>(RECENT_DELTAS);

  private static final int RECENT_DELTAS = 16;

  private record EncodedDelta(ReplicaDelta delta, ActorRef<?> owner, byte[] bytes) {}

  public HotPathSerializer(ExtendedActorSystem system) {
    this.system = system;
  }

  @Override
  public int identifier() {
    return 7_310_001;
  }

  @Override
  public String manifest(Object message) {
    if (message instanceof ReplicaNode.Delta) {
      return DELTA;
    }
    if (message instanceof ModelAdmission.ReplicaAck) {
      return ACK;
    }
    if (message instanceof ModelAdmission.Book) {
      return BOOK;
    }
    if (message instanceof ModelAdmission.BookReply) {
      return BOOK_REPLY;
    }
    if (message instanceof ModelAdmission.Release) {
      return RELEASE;
    }
    if (message instanceof ModelAdmission.MutationReply) {
      return MUTATION_REPLY;
    }
    throw new IllegalArgumentException("HotPathSerializer does not encode " + message.getClass().getName());
  }

  @Override
  public byte[] toBinary(Object message) {
    if (message instanceof ReplicaNode.Delta m) {
      int slot = (int) (m.delta().seq() & (RECENT_DELTAS - 1));
      EncodedDelta recent = recentDeltas.get(slot);
      if (recent != null && recent.delta() == m.delta() && recent.owner().equals(m.owner())) {
        return recent.bytes();
      }
      Out out = new Out();
      writeDelta(out, m.delta());
      out.string(ref(m.owner()));
      byte[] bytes = out.bytes();
      recentDeltas.set(slot, new EncodedDelta(m.delta(), m.owner(), bytes));
      return bytes;
    }
    Out out = new Out();
    if (message instanceof ModelAdmission.ReplicaAck m) {
      out.string(ref(m.peer()));
      out.i64(m.epoch());
      out.i64(m.seq());
    } else if (message instanceof ModelAdmission.Book m) {
      writeRequest(out, m.request());
      out.i64(m.nonce());
      out.i64(m.deadlineMillis());
      out.string(ref(m.replyTo()));
    } else if (message instanceof ModelAdmission.BookReply m) {
      writeAnswer(out, m.answer());
      writeError(out, m.error());
    } else if (message instanceof ModelAdmission.Release m) {
      out.string(m.requestId());
      out.i64(m.attempt());
      out.string(ref(m.replyTo()));
    } else if (message instanceof ModelAdmission.MutationReply m) {
      writeMutation(out, m.result());
    } else {
      throw new IllegalArgumentException("HotPathSerializer does not encode " + message.getClass().getName());
    }
    return out.bytes();
  }

  @Override
  public Object fromBinary(byte[] bytes, String manifest) {
    In in = new In(bytes);
    return switch (manifest) {
      case DELTA -> new ReplicaNode.Delta(readDelta(in), stableRef(in.string()));
      case ACK -> new ModelAdmission.ReplicaAck(stableRef(in.string()), in.i64(), in.i64());
      case BOOK -> new ModelAdmission.Book(readRequest(in), in.i64(), in.i64(), resolve(in.string()));
      case BOOK_REPLY -> new ModelAdmission.BookReply(readAnswer(in), readError(in));
      case RELEASE -> new ModelAdmission.Release(in.string(), in.i64(), resolve(in.string()));
      case MUTATION_REPLY -> new ModelAdmission.MutationReply(readMutation(in));
      default -> throw new IllegalArgumentException("unknown HotPathSerializer manifest '" + manifest + "'");
    };
  }

  // ---- actor references

  private ActorRefResolver resolver() {
    ActorRefResolver r = resolver;
    if (r == null) {
      r = ActorRefResolver.get(Adapter.toTyped(system));
      resolver = r;
    }
    return r;
  }

  private String ref(ActorRef<?> ref) {
    return resolver().toSerializationFormat(ref);
  }

  private <T> ActorRef<T> resolve(String path) {
    return resolver().resolveActorRef(path);
  }

  /** A reference that recurs (its path carries the actor's uid, so a new incarnation is a new entry). */
  @SuppressWarnings("unchecked")
  private <T> ActorRef<T> stableRef(String path) {
    ActorRef<?> cached = stableRefs.get(path);
    if (cached == null) {
      if (stableRefs.size() >= MAX_CACHED_REFS) {
        stableRefs.clear();
      }
      cached = resolve(path);
      stableRefs.put(path, cached);
    }
    return (ActorRef<T>) cached;
  }

  private ObjectMapper cbor() {
    ObjectMapper mapper = cbor;
    if (mapper == null) {
      mapper = JacksonObjectMapperProvider.get(system).getOrCreate("jackson-cbor", Optional.empty());
      cbor = mapper;
    }
    return mapper;
  }

  // ---- replication

  private void writeDelta(Out out, ReplicaDelta d) {
    out.string(d.model());
    out.i64(d.epoch());
    out.i64(d.seq());
    out.i64(d.sentAtMillis());
    if (d.view() == null) {
      out.i32(-1);
    } else {
      try {
        out.blob(cbor().writeValueAsBytes(d.view()));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    out.i32(d.loads().size());
    for (RankRecord r : d.loads()) {
      out.string(r.workerId());
      out.i32(r.dpRank());
      writeLoad(out, r.booked());
      ReportedLoad reported = r.reported();
      out.bool(reported != null);
      if (reported != null) {
        out.i64(reported.decodeBlocks());
        out.i64(reported.prefillTokens());
        out.i32(reported.waitingRequests());
        out.i64(reported.reportedAtMillis());
      }
    }
    out.i32(d.closed().size());
    for (ClosedBooking c : d.closed()) {
      out.string(c.requestId());
      out.i64(c.attempt());
    }
    out.i32(d.opened().size());
    for (LedgerSnapshot.Entry e : d.opened()) {
      out.string(e.requestId());
      out.i64(e.attempt());
      writeRank(out, e.rank());
      out.i64(e.prefillTokens());
      out.i64(e.decodeBlocks());
      out.i64(e.bookedAtMillis());
      out.i64(e.queuedMicros());
      writeSelection(out, e.selection());
      out.longs(e.sequenceHashes());
      out.i64(e.nonce());
      out.bool(e.prefillDone());
      out.i64(e.leaseExpiresAtMillis());
    }
    out.i32(d.changed().size());
    for (BookingChange c : d.changed()) {
      out.string(c.requestId());
      out.i64(c.attempt());
      out.bool(c.prefillDone());
      out.i64(c.leaseExpiresAtMillis());
    }
    out.i64(d.highestAttempt());
  }

  private ReplicaDelta readDelta(In in) {
    String model = in.string();
    long epoch = in.i64();
    long seq = in.i64();
    long sentAt = in.i64();
    byte[] viewBytes = in.blob();
    ViewState view;
    try {
      view = viewBytes == null ? null : cbor().readValue(viewBytes, ViewState.class);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    int loadCount = in.count();
    List<RankRecord> loads = new ArrayList<>(loadCount);
    for (int i = 0; i < loadCount; i++) {
      loads.add(new RankRecord(in.string(), in.i32(), readLoad(in),
          in.bool() ? new ReportedLoad(in.i64(), in.i64(), in.i32(), in.i64()) : null));
    }
    int closedCount = in.count();
    List<ClosedBooking> closed = new ArrayList<>(closedCount);
    for (int i = 0; i < closedCount; i++) {
      closed.add(new ClosedBooking(in.string(), in.i64()));
    }
    int openedCount = in.count();
    List<LedgerSnapshot.Entry> opened = new ArrayList<>(openedCount);
    for (int i = 0; i < openedCount; i++) {
      opened.add(new LedgerSnapshot.Entry(in.string(), in.i64(), readRank(in), in.i64(), in.i64(), in.i64(),
          in.i64(), readSelection(in), in.longs(), in.i64(), in.bool(), in.i64()));
    }
    int changedCount = in.count();
    List<BookingChange> changed = new ArrayList<>(changedCount);
    for (int i = 0; i < changedCount; i++) {
      changed.add(new BookingChange(in.string(), in.i64(), in.bool(), in.i64()));
    }
    return new ReplicaDelta(model, epoch, seq, sentAt, view, loads, closed, opened, changed, in.i64());
  }

  // ---- Book, Release and their answers

  private static void writeRequest(Out out, SelectionRequest r) {
    out.string(r.model());
    out.string(r.requestId());
    out.longs(r.blockHashes());
    out.i32(r.islTokens());
    out.i32(r.expectedOutputTokens());
    out.string(r.pinnedWorker());
    out.bool(r.pinnedDpRank() != null);
    if (r.pinnedDpRank() != null) {
      out.i32(r.pinnedDpRank());
    }
    out.i32(r.allowedWorkers().size());
    for (String worker : r.allowedWorkers()) {
      out.string(worker);
    }
    out.i32(r.priority());
    out.nullableDouble(r.temperature());
    out.nullableDouble(r.overlapCredit());
    out.nullableDouble(r.prefillLoadScale());
  }

  private static SelectionRequest readRequest(In in) {
    String model = in.string();
    String requestId = in.string();
    long[] hashes = in.longs();
    int isl = in.i32();
    int expectedOutput = in.i32();
    String pinnedWorker = in.string();
    Integer pinnedDpRank = in.bool() ? in.i32() : null;
    int allowedCount = in.count();
    Set<String> allowed = new HashSet<>();
    for (int i = 0; i < allowedCount; i++) {
      allowed.add(in.string());
    }
    return new SelectionRequest(model, requestId, hashes, isl, expectedOutput, pinnedWorker, pinnedDpRank, allowed,
        in.i32(), in.nullableDouble(), in.nullableDouble(), in.nullableDouble());
  }

  private static void writeAnswer(Out out, BookingAnswer a) {
    out.bool(a != null);
    if (a == null) {
      return;
    }
    writeSelection(out, a.selection());
    out.string(a.requestId());
    out.i64(a.attempt());
    out.bool(a.replay());
    out.i64(a.queuedMicros());
    out.i64(a.leaseExpiresAtMillis());
    out.i64(a.epoch());
  }

  private static BookingAnswer readAnswer(In in) {
    if (!in.bool()) {
      return null;
    }
    return new BookingAnswer(readSelection(in), in.string(), in.i64(), in.bool(), in.i64(), in.i64(), in.i64());
  }

  private static void writeError(Out out, RoutingError e) {
    out.bool(e != null);
    if (e != null) {
      out.string(e.code().name());
      out.string(e.reason());
      out.string(e.message());
    }
  }

  private static RoutingError readError(In in) {
    return in.bool() ? new RoutingError(RoutingError.Code.valueOf(in.string()), in.string(), in.string()) : null;
  }

  private static void writeMutation(Out out, MutationResult r) {
    out.bool(r.applied());
    out.i64(r.leaseExpiresAtMillis());
    LoadUpdate load = r.load();
    out.bool(load != null);
    if (load != null) {
      out.i64(load.epoch());
      writeRank(out, load.rank());
      writeLoad(out, load.load());
    }
  }

  private static MutationResult readMutation(In in) {
    boolean applied = in.bool();
    long lease = in.i64();
    LoadUpdate load = in.bool() ? new LoadUpdate(in.i64(), readRank(in), readLoad(in)) : null;
    if (!applied && lease == 0 && load == null) {
      return MutationResult.NOT_APPLIED;
    }
    return new MutationResult(applied, lease, load);
  }

  // ---- shared parts

  private static void writeSelection(Out out, SelectionResult s) {
    out.bool(s != null);
    if (s == null) {
      return;
    }
    writeRank(out, s.rank());
    out.string(s.endpoint());
    out.string(s.region());
    out.i32(s.overlapBlocks());
    out.i32(s.cachedTokens());
    out.f64(s.cost());
    writeLoad(out, s.load());
    out.i64(s.viewVersion());
    out.string(s.policy());
  }

  private static SelectionResult readSelection(In in) {
    if (!in.bool()) {
      return null;
    }
    return new SelectionResult(readRank(in), in.string(), in.string(), in.i32(), in.i32(), in.f64(), readLoad(in),
        in.i64(), in.string());
  }

  private static void writeRank(Out out, Rank rank) {
    out.bool(rank != null);
    if (rank != null) {
      out.string(rank.workerId());
      out.i32(rank.dpRank());
    }
  }

  private static Rank readRank(In in) {
    return in.bool() ? new Rank(in.string(), in.i32()) : null;
  }

  private static void writeLoad(Out out, RankLoad load) {
    out.bool(load != null);
    if (load != null) {
      out.i64(load.seq());
      out.i32(load.inFlight());
      out.i64(load.prefillTokens());
      out.i64(load.decodeBlocks());
    }
  }

  private static RankLoad readLoad(In in) {
    return in.bool() ? new RankLoad(in.i64(), in.i32(), in.i64(), in.i64()) : null;
  }

  private static final VarHandle INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
  private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /**
   * A growing big-endian buffer. A blob is its length (-1: null) then its bytes; a string is a blob the first time a
   * message holds it, and {@code -2 - k} when it is the message's k-th distinct string again (a delta repeats each
   * worker id, endpoint, region and policy once per booking).
   */
  private static final class Out {
    private byte[] buf = new byte[256];
    private int size;
    private final HashMap<String, Integer> strings = new HashMap<>();

    private void room(int n) {
      if (size + n > buf.length) {
        buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + n));
      }
    }

    void bool(boolean v) {
      room(1);
      buf[size++] = (byte) (v ? 1 : 0);
    }

    void i32(int v) {
      room(4);
      INT.set(buf, size, v);
      size += 4;
    }

    void i64(long v) {
      room(8);
      LONG.set(buf, size, v);
      size += 8;
    }

    void f64(double v) {
      i64(Double.doubleToRawLongBits(v));
    }

    void nullableDouble(Double v) {
      bool(v != null);
      if (v != null) {
        f64(v);
      }
    }

    void string(String s) {
      if (s == null) {
        i32(-1);
        return;
      }
      Integer seen = strings.putIfAbsent(s, strings.size());
      if (seen != null) {
        i32(-2 - seen);
      } else {
        blob(s.getBytes(StandardCharsets.UTF_8));
      }
    }

    void blob(byte[] b) {
      if (b == null) {
        i32(-1);
        return;
      }
      i32(b.length);
      room(b.length);
      System.arraycopy(b, 0, buf, size, b.length);
      size += b.length;
    }

    void longs(long[] values) {
      i32(values.length);
      room(values.length * 8);
      for (long v : values) {
        LONG.set(buf, size, v);
        size += 8;
      }
    }

    byte[] bytes() {
      return Arrays.copyOf(buf, size);
    }
  }

  private static final class In {
    private final ByteBuffer buf;
    private final ArrayList<String> strings = new ArrayList<>();

    In(byte[] bytes) {
      this.buf = ByteBuffer.wrap(bytes);
    }

    boolean bool() {
      return buf.get() != 0;
    }

    int i32() {
      return buf.getInt();
    }

    /** A collection's size, checked against what is left so a corrupt length cannot allocate a huge list. */
    int count() {
      int n = buf.getInt();
      if (n < 0 || n > buf.remaining()) {
        throw new IllegalArgumentException("corrupt HotPathSerializer message: count " + n);
      }
      return n;
    }

    long i64() {
      return buf.getLong();
    }

    double f64() {
      return buf.getDouble();
    }

    Double nullableDouble() {
      return bool() ? f64() : null;
    }

    String string() {
      int n = buf.getInt();
      if (n == -1) {
        return null;
      }
      if (n < -1) {
        int k = -2 - n;
        if (k >= strings.size()) {
          throw new IllegalArgumentException("corrupt HotPathSerializer message: string " + k);
        }
        return strings.get(k);
      }
      if (n > buf.remaining()) {
        throw new IllegalArgumentException("corrupt HotPathSerializer message: length " + n);
      }
      String s = new String(buf.array(), buf.position(), n, StandardCharsets.UTF_8);
      buf.position(buf.position() + n);
      strings.add(s);
      return s;
    }

    byte[] blob() {
      int n = buf.getInt();
      if (n < 0) {
        return null;
      }
      if (n > buf.remaining()) {
        throw new IllegalArgumentException("corrupt HotPathSerializer message: length " + n);
      }
      byte[] b = new byte[n];
      buf.get(b);
      return b;
    }

    long[] longs() {
      int n = buf.getInt();
      if (n < 0 || n > buf.remaining() / 8) {
        throw new IllegalArgumentException("corrupt HotPathSerializer message: " + n + " longs");
      }
      long[] values = new long[n];
      for (int i = 0; i < n; i++) {
        values[i] = buf.getLong();
      }
      return values;
    }
  }
}
