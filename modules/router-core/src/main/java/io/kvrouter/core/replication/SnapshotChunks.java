package io.kvrouter.core.replication;

import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.SelectionResult;
import java.lang.reflect.RecordComponent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Cuts a full copy of a model's replicated state into {@link SnapshotChunk}s by estimated encoded size, and puts
 * chunks back together.
 *
 * <p><b>The estimate</b> is an upper bound of the record's Jackson CBOR encoding with property names as text keys
 * (how router-cluster's {@code jackson-cbor} binding sends it): every record is a map (header ≤ 9 bytes) whose keys
 * are its component names (1 header byte + the name: every name is shorter than 24 characters); every number, int
 * or long or double, counts 9 bytes (CBOR's widest), a boolean or null 1, a string 9 + its UTF-8 length, an array a
 * 9-byte header plus its items. Component names are read from the records themselves, so a renamed or added
 * component keeps the key part right. The estimate grows with every string, list and hash in the copy (the property
 * the tests check here); router-cluster's tests check it against the real serializer's size.
 */
public final class SnapshotChunks {
  private static final int NUMBER = 9;
  private static final int HEADER = 9;
  private static final int SMALL = 1;
  private static final int ENTRY_KEYS = keys(LedgerSnapshot.Entry.class);
  private static final int RANK_KEYS = keys(Rank.class);
  private static final int SELECTION_KEYS = keys(SelectionResult.class);
  private static final int RANK_LOAD_KEYS = keys(RankLoad.class);
  private static final int REPORTED_KEYS = keys(ReportedLoad.class);
  private static final int RECORD_KEYS = keys(RankRecord.class);
  private static final int WORKER_KEYS = keys(WorkerConfig.class);
  private static final int VIEW_KEYS = keys(ViewState.class);
  private static final int CHUNK_KEYS = keys(SnapshotChunk.class);
  private static final int DELTA_KEYS = keys(ReplicaDelta.class);
  private static final int CLOSED_KEYS = keys(ClosedBooking.class);
  private static final int CHANGE_KEYS = keys(BookingChange.class);
  private static final int QUEUED_KEYS = keys(QueuedBook.class);
  private static final int SESSION_KEYS = keys(SessionBinding.class);

  private SnapshotChunks() {}

  /**
   * The chunks of one copy as of (epoch, seq): chunk 0 carries {@code view} and {@code loads} and as many bookings as
   * fit, the others only bookings, then the queued Books; at least one chunk, even with no booking. Every chunk's
   * estimate stays within {@code maxChunkBytes} except chunk 0 when the view and loads alone exceed it (they cannot
   * be split). A booking too large for an empty chunk keeps only the leading sequence hashes that fit.
   */
  public static List<SnapshotChunk> cut(String model, long epoch, long seq, long sentAtMillis, ViewState view,
      List<RankRecord> loads, List<LedgerSnapshot.Entry> bookings, long highestAttempt, int maxChunkBytes) {
    return cut(model, epoch, seq, sentAtMillis, view, loads, bookings, highestAttempt, List.of(), maxChunkBytes);
  }

  /** As above, with the Books waiting in the owner's queue. */
  public static List<SnapshotChunk> cut(String model, long epoch, long seq, long sentAtMillis, ViewState view,
      List<RankRecord> loads, List<LedgerSnapshot.Entry> bookings, long highestAttempt, List<QueuedBook> queued,
      int maxChunkBytes) {
    return cut(model, epoch, seq, sentAtMillis, view, loads, bookings, highestAttempt, queued, List.of(),
        maxChunkBytes);
  }

  /** As above, with the session bindings (after the queued Books). */
  public static List<SnapshotChunk> cut(String model, long epoch, long seq, long sentAtMillis, ViewState view,
      List<RankRecord> loads, List<LedgerSnapshot.Entry> bookings, long highestAttempt, List<QueuedBook> queued,
      List<SessionBinding> sessions, int maxChunkBytes) {
    Parts parts = new Parts((int) baseBytes(model, null, List.of()), baseBytes(model, view, loads), maxChunkBytes);
    for (LedgerSnapshot.Entry booking : bookings) {
      LedgerSnapshot.Entry fitted = fitAlone(booking, maxChunkBytes - parts.header);
      parts.room(entryBytes(fitted));
      parts.bookings.add(fitted);
    }
    for (QueuedBook book : queued) {
      parts.room(queuedBytes(book));
      parts.queued.add(book);
    }
    for (SessionBinding binding : sessions) {
      parts.room(sessionBytes(binding));
      parts.sessions.add(binding);
    }
    parts.close();
    int count = parts.closed.size();
    List<SnapshotChunk> chunks = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      Parts.Part part = parts.closed.get(i);
      chunks.add(new SnapshotChunk(model, epoch, seq, i, count, sentAtMillis, i == 0 ? view : null,
          i == 0 ? loads : List.of(), part.bookings(), highestAttempt, part.queued(), part.sessions()));
    }
    return chunks;
  }

  /** The chunks being cut: what goes in the current one, and those already full. */
  private static final class Parts {
    record Part(List<LedgerSnapshot.Entry> bookings, List<QueuedBook> queued, List<SessionBinding> sessions) {}

    final int header;
    final int maxChunkBytes;
    final List<Part> closed = new ArrayList<>();
    List<LedgerSnapshot.Entry> bookings = new ArrayList<>();
    List<QueuedBook> queued = new ArrayList<>();
    List<SessionBinding> sessions = new ArrayList<>();
    long size;

    Parts(int header, long firstSize, int maxChunkBytes) {
      this.header = header;
      this.size = firstSize;
      this.maxChunkBytes = maxChunkBytes;
    }

    /** Makes room for an item of {@code bytes}: closes the current chunk if it would overflow (and holds anything). */
    void room(int bytes) {
      boolean holds = !bookings.isEmpty() || !queued.isEmpty() || !sessions.isEmpty();
      if (size + bytes > maxChunkBytes && (holds || closed.isEmpty())) {
        close();
        size = header;
      }
      size += bytes;
    }

    void close() {
      closed.add(new Part(bookings, queued, sessions));
      bookings = new ArrayList<>();
      queued = new ArrayList<>();
      sessions = new ArrayList<>();
    }
  }

  /** {@code booking}, its sequence hashes cut to the leading ones that let it fit in {@code budget} bytes. */
  static LedgerSnapshot.Entry fitAlone(LedgerSnapshot.Entry booking, int budget) {
    int bytes = entryBytes(booking);
    if (bytes <= budget) {
      return booking;
    }
    long[] hashes = booking.sequenceHashes();
    int withoutHashes = bytes - NUMBER * hashes.length;
    int keep = (int) Math.max(0, Math.min(hashes.length, (long) (budget - withoutHashes) / NUMBER));
    return booking.withSequenceHashes(Arrays.copyOf(hashes, keep));
  }

  /**
   * The copy a complete set of chunks of one (epoch, seq) carries, in any order.
   *
   * @throws IllegalArgumentException when chunks are missing, repeated or of different copies
   */
  static RecoveredState assemble(List<SnapshotChunk> chunks) {
    if (chunks.isEmpty()) {
      throw new IllegalArgumentException("no chunk");
    }
    SnapshotChunk first = chunks.get(0);
    SnapshotChunk[] byIndex = new SnapshotChunk[first.count()];
    for (SnapshotChunk chunk : chunks) {
      if (chunk.epoch() != first.epoch() || chunk.seq() != first.seq() || chunk.count() != first.count()
          || !chunk.model().equals(first.model())) {
        throw new IllegalArgumentException("chunks of different copies: " + stamp(first) + " and " + stamp(chunk));
      }
      if (chunk.index() < 0 || chunk.index() >= byIndex.length || byIndex[chunk.index()] != null) {
        throw new IllegalArgumentException("chunk " + chunk.index() + " of " + chunk.count() + " repeated or out of range");
      }
      byIndex[chunk.index()] = chunk;
    }
    List<LedgerSnapshot.Entry> bookings = new ArrayList<>();
    List<QueuedBook> queued = new ArrayList<>();
    List<SessionBinding> sessions = new ArrayList<>();
    for (int i = 0; i < byIndex.length; i++) {
      if (byIndex[i] == null) {
        throw new IllegalArgumentException("chunk " + i + " of " + byIndex.length + " missing");
      }
      bookings.addAll(byIndex[i].bookings());
      queued.addAll(byIndex[i].queued());
      sessions.addAll(byIndex[i].sessions());
    }
    SnapshotChunk head = byIndex[0];
    return new RecoveredState(head.view(), head.loads(), new LedgerSnapshot(bookings, head.highestAttempt()),
        head.seq(), queued, sessions);
  }

  private static String stamp(SnapshotChunk chunk) {
    return chunk.model() + "@" + chunk.epoch() + "/" + chunk.seq() + " of " + chunk.count();
  }

  // ---- the estimate

  /** The estimated encoded size of a whole chunk. */
  public static int estimatedBytes(SnapshotChunk chunk) {
    long size = baseBytes(chunk.model(), chunk.view(), chunk.loads());
    for (LedgerSnapshot.Entry booking : chunk.bookings()) {
      size += entryBytes(booking);
    }
    for (QueuedBook book : chunk.queued()) {
      size += queuedBytes(book);
    }
    for (SessionBinding binding : chunk.sessions()) {
      size += sessionBytes(binding);
    }
    return (int) Math.min(Integer.MAX_VALUE, size);
  }

  /**
   * A chunk without its bookings and queued Books: its keys, model, numbers, view (or null), loads and the lists'
   * headers.
   */
  private static long baseBytes(String model, ViewState view, List<RankRecord> loads) {
    long size = HEADER + CHUNK_KEYS + string(model) + 6 * NUMBER + (view == null ? SMALL : viewBytes(view))
        + HEADER + HEADER + HEADER + HEADER;
    for (RankRecord load : loads) {
      size += rankRecordBytes(load);
    }
    return size;
  }

  /** The estimated encoded size of a whole delta. */
  public static int estimatedBytes(ReplicaDelta delta) {
    long size = deltaBaseBytes(delta.model()) + (delta.view() == null ? 0 : viewBytes(delta.view()));
    for (ClosedBooking closed : delta.closed()) {
      size += closedBytes(closed);
    }
    for (LedgerSnapshot.Entry booking : delta.opened()) {
      size += entryBytes(booking);
    }
    for (BookingChange change : delta.changed()) {
      size += changeBytes(change);
    }
    for (RankRecord load : delta.loads()) {
      size += rankRecordBytes(load);
    }
    for (QueuedBook book : delta.queued()) {
      size += queuedBytes(book);
    }
    size += (long) NUMBER * delta.unqueued().size();
    for (SessionBinding binding : delta.sessions()) {
      size += sessionBytes(binding);
    }
    for (String sessionId : delta.sessionsEnded()) {
      size += sessionEndedBytes(sessionId);
    }
    return (int) Math.min(Integer.MAX_VALUE, size);
  }

  /** A delta without its lists' items: its keys, model, numbers and the lists' headers. */
  static int deltaBaseBytes(String model) {
    return HEADER + DELTA_KEYS + string(model) + 4 * NUMBER + SMALL + 8 * HEADER;
  }

  static int sessionBytes(SessionBinding binding) {
    return HEADER + SESSION_KEYS + string(binding.sessionId()) + rankBytes(binding.rank()) + 3 * NUMBER;
  }

  static int sessionEndedBytes(String sessionId) {
    return string(sessionId);
  }

  static int queuedBytes(QueuedBook book) {
    return HEADER + QUEUED_KEYS + string(book.requestId()) + 2 * NUMBER + string(book.replyTo())
        + string(book.policyClass());
  }

  static int unqueuedBytes() {
    return NUMBER;
  }

  static int closedBytes(ClosedBooking closed) {
    return HEADER + CLOSED_KEYS + string(closed.requestId()) + NUMBER;
  }

  static int changeBytes(BookingChange change) {
    return HEADER + CHANGE_KEYS + string(change.requestId()) + 3 * NUMBER + SMALL + HEADER
        + NUMBER * change.nonces().size();
  }

  public static int entryBytes(LedgerSnapshot.Entry e) {
    return HEADER + ENTRY_KEYS + string(e.requestId()) + rankBytes(e.rank()) + 7 * NUMBER + SMALL
        + selectionBytes(e.selection()) + HEADER + NUMBER * e.sequenceHashes().length + HEADER
        + NUMBER * e.nonces().size() + string(e.policyClass());
  }

  public static int viewBytes(ViewState view) {
    int size = HEADER + VIEW_KEYS + string(view.model()) + 2 * NUMBER + string(view.policy()) + HEADER + HEADER;
    for (WorkerConfig worker : view.workers()) {
      size += HEADER + WORKER_KEYS + string(worker.workerId()) + 5 * NUMBER + string(worker.endpoint())
          + string(worker.region()) + string(worker.role().name()) + HEADER + HEADER;
      for (String taint : worker.taints()) {
        size += string(taint);
      }
      for (String adapter : worker.loraAdapters()) {
        size += string(adapter);
      }
    }
    for (Map.Entry<String, String> parameter : view.parameters().entrySet()) {
      size += string(parameter.getKey()) + string(parameter.getValue());
    }
    return size;
  }

  public static int rankRecordBytes(RankRecord record) {
    return HEADER + RECORD_KEYS + string(record.workerId()) + NUMBER + rankLoadBytes(record.booked())
        + (record.reported() == null ? SMALL : HEADER + REPORTED_KEYS + 4 * NUMBER + adapterBytes(record.reported()));
  }

  private static int rankBytes(Rank rank) {
    return HEADER + RANK_KEYS + string(rank.workerId()) + NUMBER;
  }

  private static int rankLoadBytes(RankLoad load) {
    return load == null ? SMALL : HEADER + RANK_LOAD_KEYS + 4 * NUMBER;
  }

  private static int selectionBytes(SelectionResult s) {
    if (s == null) {
      return SMALL;
    }
    return HEADER + SELECTION_KEYS + rankBytes(s.rank()) + string(s.endpoint()) + string(s.region())
        + 4 * NUMBER + rankLoadBytes(s.load()) + string(s.policy()) + selectionBytes(s.decode());
  }

  private static int adapterBytes(ReportedLoad reported) {
    int size = HEADER;
    for (String adapter : reported.loraAdapters()) {
      size += string(adapter);
    }
    return size;
  }

  private static int string(String value) {
    if (value == null) {
      return SMALL;
    }
    int bytes = 0;
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      bytes += c < 0x80 ? 1 : c < 0x800 || Character.isSurrogate(c) ? 2 : 3; // a surrogate pair: 4 bytes
    }
    return HEADER + bytes;
  }

  /** The keys of a record's map: one header byte and the name of each component (names are ASCII, < 24 chars). */
  private static int keys(Class<? extends Record> type) {
    int size = 0;
    for (RecordComponent component : type.getRecordComponents()) {
      size += 1 + component.getName().getBytes(StandardCharsets.UTF_8).length;
    }
    return size;
  }
}
