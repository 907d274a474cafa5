package io.kvrouter.core.admission;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.policy.PolicyClass;
import io.kvrouter.core.policy.QueueConfig;
import io.kvrouter.core.policy.QueueOrder;
import io.kvrouter.core.replication.QueuedBook;
import io.kvrouter.core.replication.ReplicationLog;
import io.kvrouter.core.selection.SelectionRequest;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Books waiting for capacity, in classes ({@link QueueConfig}), and the decisions made for them since they were last
 * collected ({@link Completion}s, addressed by the nonce of the Book's ask). Single-threaded (the admission state's).
 *
 * <p><b>Order within a class</b>: strict-priority tier first (higher first), then the class's policy score (higher
 * first: FCFS {@code jump − arrival seconds}, WSPT {@code (1 + jump) / cost}), then arrival. A Book that has waited
 * {@code queue_aging_ms} ranks above every tier (the aged among themselves by arrival). Each class keeps one ordered
 * lane per placement (a pinned worker and rank, an allowed-workers set, or none), so a head that can only go to busy
 * workers blocks only its own lane; the class's next Book is the best lane head that can be dispatched now.
 *
 * <p><b>Between classes: deficit round robin</b> over the classes with Books, costs in uncached prompt tokens
 * ({@code max(1, uncached)} at arrival). Visiting a class whose best dispatchable head costs more than its deficit adds
 * one quantum; a class that cannot dispatch keeps its deficit and gets nothing; an empty class's deficit is 0. After a
 * round in which no class could afford its head, every class with a dispatchable head gets the fewest whole rounds of
 * quanta that let one afford it, at once (an expensive head never makes the ring spin). The cursor stays on a class
 * while it can afford its next head. Over any stretch in which two classes always have dispatchable Books, each one's
 * dispatched tokens stay within one quantum plus one Book's cost of its quantum-proportional share.
 */
final class AdmissionQueue {
  /** Why a Book entered the queue. */
  enum Reason { ALL_BUSY, BACKLOG }

  /** The tier of an aged Book: above every strict-priority tier. */
  private static final int AGED_TIER = Integer.MAX_VALUE;

  /** The reasons a queued Book (or a Book refused at the queue) did not leave it booked, as the counters name them. */
  static final String CANCELLED = "CANCELLED";
  static final String SUPERSEDED = "SUPERSEDED";
  static final String SELECTION_FAILED = "SELECTION_FAILED";
  static final String MAX_PENDING = "MAX_PENDING";

  /** Where a Book may go: one lane per distinct placement within a class. */
  record Placement(String pinnedWorker, Integer pinnedDpRank, Set<String> allowedWorkers) {
    static Placement of(SelectionRequest request) {
      return new Placement(request.pinnedWorker(), request.pinnedDpRank(), request.allowedWorkers());
    }
  }

  /** One queued Book. */
  static final class Entry {
    final String requestId;
    final long nonce;
    final SelectionRequest request;
    final String replyTo;
    final long deadlineMillis;
    final long enqueuedAtMillis;
    final long seq;
    final int rawIslTokens;
    final int cachedTokens;
    /** Its deficit-round-robin cost and WSPT denominator: {@code max(1, uncached tokens)}. */
    final long cost;
    final Reason reason;
    final int busyRanks;
    final int eligibleRanks;
    final int queuedAhead;
    final Placement placement;
    ClassQueue cls;
    int tier;
    double score;
    boolean aged;
    boolean removed;

    Entry(String requestId, long nonce, SelectionRequest request, String replyTo, long deadlineMillis,
        long enqueuedAtMillis, long seq, int rawIslTokens, int cachedTokens, Reason reason, int busyRanks,
        int eligibleRanks, int queuedAhead) {
      this.requestId = requestId;
      this.nonce = nonce;
      this.request = request;
      this.replyTo = replyTo;
      this.deadlineMillis = deadlineMillis;
      this.enqueuedAtMillis = enqueuedAtMillis;
      this.seq = seq;
      this.rawIslTokens = rawIslTokens;
      this.cachedTokens = cachedTokens;
      this.cost = Math.max(1, rawIslTokens - cachedTokens);
      this.reason = reason;
      this.busyRanks = busyRanks;
      this.eligibleRanks = eligibleRanks;
      this.queuedAhead = queuedAhead;
      this.placement = Placement.of(request);
    }

    long uncachedTokens() {
      return Math.max(0, rawIslTokens - cachedTokens);
    }

    PolicyClass policyClass() {
      return cls.config;
    }
  }

  private static final Comparator<Entry> ORDER = (a, b) -> {
    if (a.tier != b.tier) {
      return Integer.compare(b.tier, a.tier);
    }
    if (a.score != b.score) {
      return Double.compare(b.score, a.score);
    }
    return Long.compare(a.seq, b.seq);
  };

  private static final Comparator<Entry> BY_DEADLINE = Comparator.<Entry>comparingLong(e -> e.deadlineMillis)
      .thenComparingLong(e -> e.seq);

  /** Counters of one class, kept across configuration changes while the class exists. */
  static final class ClassStats {
    long enqueued;
    long dispatched;
    long waitedMicrosTotal;
    final TreeMap<String, Long> rejections = new TreeMap<>();

    void rejected(String reason) {
      rejections.merge(reason, 1L, Long::sum);
    }
  }

  /** One class's Books: a lane per placement, the arrival order (for aging), its deficit and usage. */
  static final class ClassQueue {
    final PolicyClass config;
    final ClassStats stats;
    final LinkedHashMap<Placement, TreeSet<Entry>> lanes = new LinkedHashMap<>();
    final ArrayDeque<Entry> arrivals = new ArrayDeque<>();
    long deficit;
    int size;
    long rawIslTokens;
    long cachedTokens;

    ClassQueue(PolicyClass config, ClassStats stats) {
      this.config = config;
      this.stats = stats;
    }

    /** The best Book of the class by order, whether or not it can go now; null when empty. */
    Entry best() {
      Entry best = null;
      for (TreeSet<Entry> lane : lanes.values()) {
        Entry head = lane.first();
        if (best == null || ORDER.compare(head, best) < 0) {
          best = head;
        }
      }
      return best;
    }

    /** The best lane head that {@code dispatchable} accepts, trying heads in order; null when none. */
    Entry dispatchableHead(Predicate<Entry> dispatchable) {
      if (lanes.size() == 1) {
        Entry head = lanes.values().iterator().next().first();
        return dispatchable.test(head) ? head : null;
      }
      List<Entry> heads = new ArrayList<>(lanes.size());
      for (TreeSet<Entry> lane : lanes.values()) {
        heads.add(lane.first());
      }
      heads.sort(ORDER);
      for (Entry head : heads) {
        if (dispatchable.test(head)) {
          return head;
        }
      }
      return null;
    }
  }

  private QueueConfig config;
  private final List<ClassQueue> ring = new ArrayList<>();
  private final Map<String, ClassQueue> byName = new HashMap<>();
  private final Map<String, ClassStats> stats = new HashMap<>();
  private int cursor;
  private final HashMap<Long, Entry> byNonce = new HashMap<>();
  private final HashMap<String, Entry> byRequestId = new HashMap<>();
  private final TreeSet<Entry> byDeadline = new TreeSet<>(BY_DEADLINE);
  private long nextSeq;
  private int size;
  private final List<Completion> completions = new ArrayList<>();
  private ReplicationLog log;

  AdmissionQueue(QueueConfig config) {
    configure(config);
  }

  /** From now on, every Book entering or leaving the queue is recorded in {@code replicationLog}. */
  void replicateTo(ReplicationLog replicationLog) {
    this.log = replicationLog;
  }

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  QueueConfig config() {
    return config;
  }

  /**
   * Takes a new configuration: every waiting Book is put in its class under the new one (by the request's
   * policy_class and its uncached tokens at arrival) and keyed by that class's order; arrival order, aging and the
   * deficits of classes that still exist are kept.
   */
  void configure(QueueConfig next) {
    List<Entry> waiting = new ArrayList<>(byNonce.values());
    waiting.sort(Comparator.comparingLong(e -> e.seq));
    Map<String, Long> deficits = new HashMap<>();
    for (ClassQueue cq : ring) {
      deficits.put(cq.config.name(), cq.deficit);
    }
    String cursorClass = ring.isEmpty() ? null : ring.get(Math.min(cursor, ring.size() - 1)).config.name();
    config = next;
    ring.clear();
    byName.clear();
    Map<String, ClassStats> kept = new HashMap<>();
    for (PolicyClass c : next.all()) {
      ClassStats s = stats.getOrDefault(c.name(), new ClassStats());
      kept.put(c.name(), s);
      ClassQueue cq = new ClassQueue(c, s);
      cq.deficit = deficits.getOrDefault(c.name(), 0L);
      ring.add(cq);
      byName.put(c.name(), cq);
    }
    stats.clear();
    stats.putAll(kept);
    cursor = 0;
    for (int i = 0; i < ring.size(); i++) {
      if (ring.get(i).config.name().equals(cursorClass)) {
        cursor = i;
      }
    }
    for (Entry e : waiting) {
      ClassQueue previous = e.cls;
      e.cls = byName.get(next.resolve(e.request.policyClass(), e.uncachedTokens()).name());
      key(e);
      place(e);
      if (log != null && !previous.config.name().equals(e.cls.config.name())) {
        log.requeued(queuedBook(e));
      }
    }
  }

  private static QueuedBook queuedBook(Entry e) {
    return new QueuedBook(e.requestId, e.nonce, e.replyTo == null ? "" : e.replyTo, e.cls.config.name(),
        e.enqueuedAtMillis);
  }

  /** The class a Book naming {@code policyClass} with {@code uncachedTokens} goes to. */
  ClassQueue classFor(String policyClass, long uncachedTokens) {
    return byName.get(config.resolve(policyClass, uncachedTokens).name());
  }

  /**
   * The refusal of a Book of {@code rawIsl} and {@code cached} tokens in {@code cq}, or null: limits scale with
   * {@code workers} (the model's current worker count) and compare existing usage only, so the Book that crosses a
   * cap is taken and the next one refused; then the total bound, {@code max_pending}.
   */
  RoutingError refusal(ClassQueue cq, int workers) {
    for (PolicyClass.LimitKind kind : PolicyClass.LimitKind.values()) {
      Long perWorker = cq.config.perWorker(kind);
      if (perWorker == null) {
        continue;
      }
      long limit = saturatedProduct(perWorker, workers);
      long current = switch (kind) {
        case REQUESTS -> cq.size;
        case RAW_ISL_TOKENS -> cq.rawIslTokens;
        case CACHED_TOKENS -> cq.cachedTokens;
      };
      if (current >= limit) {
        cq.stats.rejected("QUEUE_LIMIT_" + kind.name());
        return RoutingError.queueLimit(cq.config.name(), kind.wireName(), current, limit,
            perWorker + " per worker x " + workers + " workers");
      }
    }
    if (size >= config.maxPending()) {
      cq.stats.rejected(MAX_PENDING);
      return RoutingError.queueLimit(cq.config.name(), QueueConfig.MAX_PENDING, size, config.maxPending(),
          "all classes together");
    }
    return null;
  }

  /** Queues a Book; returns its entry. */
  Entry enqueue(ClassQueue cq, String requestId, long nonce, SelectionRequest request, String replyTo,
      long deadlineMillis, long nowMillis, int rawIslTokens, int cachedTokens, Reason reason, int busyRanks,
      int eligibleRanks) {
    Entry e = new Entry(requestId, nonce, request, replyTo, deadlineMillis, nowMillis, nextSeq++, rawIslTokens,
        cachedTokens, reason, busyRanks, eligibleRanks, cq.size);
    e.cls = cq;
    key(e);
    place(e);
    byNonce.put(nonce, e);
    byRequestId.put(requestId, e);
    if (deadlineMillis > 0) {
      byDeadline.add(e);
    }
    size++;
    cq.stats.enqueued++;
    if (log != null) {
      log.queued(queuedBook(e));
    }
    return e;
  }

  /** Its tier and score under its class's order. */
  private void key(Entry e) {
    if (e.aged) {
      e.tier = AGED_TIER;
      e.score = 0;
      return;
    }
    e.tier = e.request.strictPriority();
    double jump = Math.max(0, e.request.priority());
    e.score = e.cls.config.order() == QueueOrder.WSPT ? (1 + jump) / e.cost : jump - e.enqueuedAtMillis / 1000.0;
  }

  /** Puts an entry (keyed, with its class set) into its class's lane and arrival order, and counts its usage. */
  private void place(Entry e) {
    ClassQueue cq = e.cls;
    cq.lanes.computeIfAbsent(e.placement, p -> new TreeSet<>(ORDER)).add(e);
    if (config.agingMillis() > 0 && !e.aged) {
      cq.arrivals.addLast(e); // aging's scan order; without aging nothing reads it
    }
    cq.size++;
    cq.rawIslTokens += e.rawIslTokens;
    cq.cachedTokens += e.cachedTokens;
  }

  /** Takes an entry out of every structure; its caller completes it. */
  private void remove(Entry e) {
    ClassQueue cq = e.cls;
    TreeSet<Entry> lane = cq.lanes.get(e.placement);
    lane.remove(e);
    if (lane.isEmpty()) {
      cq.lanes.remove(e.placement);
    }
    e.removed = true;
    cq.size--;
    cq.rawIslTokens -= e.rawIslTokens;
    cq.cachedTokens -= e.cachedTokens;
    if (cq.size == 0) {
      cq.arrivals.clear();
      cq.deficit = 0;
    }
    byNonce.remove(e.nonce);
    byRequestId.remove(e.requestId, e);
    if (e.deadlineMillis > 0) {
      byDeadline.remove(e);
    }
    size--;
    if (log != null) {
      log.unqueued(e.nonce);
    }
  }

  /** A retry of a request id that is still queued takes its place; the abandoned call is answered as superseded. */
  void supersede(String requestId) {
    Entry waiting = byRequestId.get(requestId);
    if (waiting != null) {
      remove(waiting);
      waiting.cls.stats.rejected(SUPERSEDED);
      complete(waiting.nonce, new BookOutcome.Rejected(new RoutingError(RoutingError.Code.FAILED_PRECONDITION,
          "SUPERSEDED", "a newer Book with the same request_id replaced it")));
    }
  }

  /** Drops the queued Book of this call, if it is still waiting; returns whether it was. */
  boolean cancel(String requestId, long nonce) {
    Entry e = byNonce.get(nonce);
    if (e == null || !e.requestId.equals(requestId)) {
      return false;
    }
    remove(e);
    e.cls.stats.rejected(CANCELLED);
    return true;
  }

  /** Rejects every Book whose deadline has passed at {@code nowMillis}; returns how many. */
  int shedExpired(long nowMillis) {
    int shed = 0;
    while (!byDeadline.isEmpty() && byDeadline.first().deadlineMillis <= nowMillis) {
      Entry e = byDeadline.first();
      remove(e);
      e.cls.stats.rejected(RoutingError.QUEUE_DEADLINE_EXCEEDED);
      complete(e.nonce, new BookOutcome.Rejected(new RoutingError(RoutingError.Code.DEADLINE_EXCEEDED,
          RoutingError.QUEUE_DEADLINE_EXCEEDED, "waited " + (nowMillis - e.enqueuedAtMillis)
              + " ms in the queue of policy class '" + e.cls.config.name() + "' until its deadline")));
      shed++;
    }
    return shed;
  }

  /** With aging on, moves every Book that has waited {@code queue_aging_ms} above its class's strict tiers. */
  void promoteAged(long nowMillis) {
    long aging = config.agingMillis();
    if (aging <= 0 || size == 0) {
      return;
    }
    for (ClassQueue cq : ring) {
      while (!cq.arrivals.isEmpty()) {
        Entry e = cq.arrivals.peekFirst();
        if (e.removed || e.aged || e.cls != cq) {
          cq.arrivals.pollFirst();
          continue;
        }
        if (nowMillis - e.enqueuedAtMillis < aging) {
          break;
        }
        cq.arrivals.pollFirst();
        TreeSet<Entry> lane = cq.lanes.get(e.placement);
        lane.remove(e);
        e.aged = true;
        key(e);
        lane.add(e);
      }
    }
  }

  /**
   * The next Book to dispatch by deficit round robin among the classes' dispatchable heads, taken out of the queue
   * (its caller completes it); null when no class has one. {@code dispatchable} is asked about lane heads only.
   */
  Entry popNext(Predicate<Entry> dispatchable) {
    if (size == 0) {
      return null;
    }
    int n = ring.size();
    Entry[] heads = new Entry[n];
    for (int k = 0; k < n; k++) {
      int i = (cursor + k) % n;
      ClassQueue cq = ring.get(i);
      if (cq.size == 0) {
        cq.deficit = 0;
        continue;
      }
      Entry head = cq.dispatchableHead(dispatchable);
      heads[i] = head;
      if (head == null) {
        continue; // it keeps its deficit and earns nothing while it cannot dispatch
      }
      if (cq.deficit >= head.cost) {
        return take(i, head);
      }
      cq.deficit += cq.config.quantum();
      if (cq.deficit >= head.cost) {
        return take(i, head);
      }
    }
    long rounds = Long.MAX_VALUE;
    for (int i = 0; i < n; i++) {
      if (heads[i] != null) {
        ClassQueue cq = ring.get(i);
        long quantum = cq.config.quantum();
        rounds = Math.min(rounds, (heads[i].cost - cq.deficit + quantum - 1) / quantum);
      }
    }
    if (rounds == Long.MAX_VALUE) {
      return null;
    }
    for (int i = 0; i < n; i++) {
      if (heads[i] != null) {
        ring.get(i).deficit += ring.get(i).config.quantum() * rounds;
      }
    }
    for (int k = 0; k < n; k++) {
      int i = (cursor + k) % n;
      if (heads[i] != null && ring.get(i).deficit >= heads[i].cost) {
        return take(i, heads[i]);
      }
    }
    throw new IllegalStateException("a bulk round left no class able to afford its head");
  }

  private Entry take(int index, Entry head) {
    ClassQueue cq = ring.get(index);
    remove(head);
    cq.deficit = cq.size == 0 ? 0 : cq.deficit - head.cost;
    Entry next = cq.size == 0 ? null : cq.best();
    cursor = next != null && cq.deficit >= next.cost ? index : (index + 1) % ring.size();
    return head;
  }

  /** Counts a dispatched Book in its class: booked after waiting {@code waitedMicros}, or refused by selection. */
  void dispatched(Entry e, boolean booked, long waitedMicros) {
    if (booked) {
      e.cls.stats.dispatched++;
      e.cls.stats.waitedMicrosTotal += waitedMicros;
    } else {
      e.cls.stats.rejected(SELECTION_FAILED);
    }
  }

  /** Counts a Book refused before it entered the queue or answered from a copy, in the class named {@code name}. */
  void rejected(String className, String reason) {
    ClassStats s = stats.get(className);
    if (s == null) {
      s = stats.get(PolicyClass.DEFAULT);
    }
    s.rejected(reason);
  }

  /** Takes every waiting Book out, answering each with {@code error} (the state is handing the model over). */
  void rejectAll(RoutingError error, String reason) {
    for (Entry e : new ArrayList<>(byNonce.values())) {
      remove(e);
      e.cls.stats.rejected(reason);
      complete(e.nonce, new BookOutcome.Rejected(error));
    }
  }

  void complete(long nonce, BookOutcome outcome) {
    completions.add(new Completion(nonce, outcome));
  }

  /** Takes back the completion of {@code nonce} made since the last drain (answered directly instead), or null. */
  BookOutcome takeCompletion(long nonce) {
    for (int i = completions.size() - 1; i >= 0; i--) {
      if (completions.get(i).nonce() == nonce) {
        return completions.remove(i).outcome();
      }
    }
    return null;
  }

  /** Queued Books decided since the last call. */
  List<Completion> drainCompletions() {
    if (completions.isEmpty()) {
      return List.of();
    }
    List<Completion> drained = new ArrayList<>(completions);
    completions.clear();
    return drained;
  }

  /** The Books waiting, oldest first, as the copies keep them. */
  List<QueuedBook> queuedBooks() {
    List<Entry> waiting = new ArrayList<>(byNonce.values());
    waiting.sort(Comparator.comparingLong(e -> e.seq));
    List<QueuedBook> books = new ArrayList<>(waiting.size());
    for (Entry e : waiting) {
      books.add(queuedBook(e));
    }
    return books;
  }

  QueueSnapshot snapshot(long nowMillis, int workers) {
    List<QueueSnapshot.ClassSnapshot> classes = new ArrayList<>(ring.size());
    long[] oldest = new long[ring.size()];
    List<Entry> waiting = new ArrayList<>(byNonce.values());
    waiting.sort(Comparator.comparingLong(e -> e.seq));
    for (int i = 0; i < ring.size(); i++) {
      oldest[i] = -1;
    }
    for (Entry e : waiting) {
      int i = ring.indexOf(e.cls);
      if (oldest[i] < 0) {
        oldest[i] = Math.max(0, nowMillis - e.enqueuedAtMillis);
      }
    }
    for (int i = 0; i < ring.size(); i++) {
      ClassQueue cq = ring.get(i);
      PolicyClass c = cq.config;
      classes.add(new QueueSnapshot.ClassSnapshot(c.name(), c.family() == null ? "" : c.family(),
          c.bucket() == null ? "" : c.bucket(), c.order().wireName(), c.queueingEnabled(), c.quantum(), cq.deficit,
          cq.size, cq.rawIslTokens, cq.cachedTokens, limit(c.requestsPerWorker(), workers),
          limit(c.rawIslTokensPerWorker(), workers), limit(c.cachedTokensPerWorker(), workers),
          Math.max(0, oldest[i]), cq.stats.enqueued, cq.stats.dispatched, cq.stats.waitedMicrosTotal,
          Map.copyOf(cq.stats.rejections)));
    }
    List<QueueSnapshot.WaitingSnapshot> listed = new ArrayList<>();
    for (Entry e : waiting) {
      if (listed.size() == QueueSnapshot.MAX_WAITING_LISTED) {
        break;
      }
      listed.add(new QueueSnapshot.WaitingSnapshot(e.requestId, e.cls.config.name(), e.request.strictPriority(),
          e.request.priority(), e.aged, e.rawIslTokens, e.uncachedTokens(), e.reason.name(),
          Math.max(0, nowMillis - e.enqueuedAtMillis),
          e.deadlineMillis > 0 ? Math.max(0, e.deadlineMillis - nowMillis) : -1));
    }
    return new QueueSnapshot(config.enabled(), size, config.maxPending(), config.agingMillis(), classes, listed);
  }

  private static long limit(Long perWorker, int workers) {
    return perWorker == null ? -1 : saturatedProduct(perWorker, workers);
  }

  private static long saturatedProduct(long a, long b) {
    long product = a * b;
    return b != 0 && (product / b != a || product < 0) ? Long.MAX_VALUE : product;
  }
}
