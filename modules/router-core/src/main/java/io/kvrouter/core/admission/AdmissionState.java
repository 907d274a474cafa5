package io.kvrouter.core.admission;

import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.membership.Membership;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.membership.Registered;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.replication.LedgerSnapshot;
import io.kvrouter.core.replication.RecoveredState;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.ReplicationLog;
import io.kvrouter.core.replication.ReplicationSender;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.replication.SnapshotChunks;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.DecisionLog;
import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.explain.QueueWait;
import io.kvrouter.core.policy.PolicyClass;
import io.kvrouter.core.policy.PolicyConfig;
import io.kvrouter.core.policy.QueueConfig;
import io.kvrouter.core.policy.Scorers;
import io.kvrouter.core.replication.QueuedBook;
import io.kvrouter.core.selection.FilterReason;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.DisaggregatedSelection;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.selection.SessionAffinity;
import io.kvrouter.core.policy.SessionConfig;
import io.kvrouter.core.replication.SessionBinding;
import io.kvrouter.core.sequences.ActivePrefixIndex;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A model's authoritative admission state, composed of its {@link Membership} (workers, load cells, policy, the
 * published view), its {@link BookingLedger} and its {@link AdmissionQueue}; this class holds the rules that tie them
 * together (book, fenced mutations, leases, queue dispatch). Single-threaded (the admission actor is its only
 * caller); inline readers see it only through the published {@link SelectionView} and the load cells, which are
 * written before any answer leaves.
 *
 * <p>A Book carries a nonce so a caller that gave up can cancel exactly what it made. Queued Books that get decided
 * later surface as {@link Completion}s.
 *
 * <p><b>Queueing</b> (off unless a class has a busy threshold; {@link QueueConfig}): a Book waits when every rank it
 * may go to is busy by its class's thresholds (or at least {@code busy_worker_ratio} of them; ranks the overload
 * filter removed count as busy), or when its class already has Books waiting, which a new arrival never bypasses.
 * Busy is judged on the load this state booked. Waiting Books leave by deficit round robin between classes, each
 * class in its own order, whenever something may have freed capacity: a Release, a MarkPrefillDone, a load report, a
 * worker registered or removed, a policy change, a cancel, the periodic expiry; a Book whose deadline passes first is
 * rejected DEADLINE_EXCEEDED {@code QUEUE_DEADLINE_EXCEEDED}.
 *
 * <p>Every incarnation has an {@link #epoch()} that orders its views, load records and replication sequence numbers
 * above the previous incarnation's. What changes is recorded in a {@link ReplicationLog} and drained as
 * {@link ReplicaDelta}s ({@link #drainReplicaDeltas}) or cut into a full copy ({@link #replicaSnapshot}); a state
 * {@link #recover recovered} from a replica's copy starts in recovery mode (see {@link #recovering()}).
 */
public final class AdmissionState implements ReplicationSender.Source {
  private final String model;
  private final AdmissionSettings settings;
  private final Clock clock;
  private final long epoch;
  private final KvOverlapSource overlapSource;
  private final ActivePrefixIndex activePrefix = new ActivePrefixIndex();
  private final ReplicationLog replication;
  private final Membership membership;
  private final BookingLedger ledger;
  private final AdmissionQueue queue;
  private final SessionBindings sessions = new SessionBindings();
  private final Candidates scratch = Candidates.inOrder();
  /** The decode half's candidates of a disaggregated Book. */
  private final Candidates decodeScratch = Candidates.inOrder();
  /** Where Books' decisions are recorded (explain), or null: not recorded. */
  private DecisionLog decisions;
  private long expiredBookings;
  /** Recovery mode: the recovered workers that have not reported load yet; null once recovery is over. */
  private Set<String> awaitingReport;
  /** Recovery mode: the workers that reported load since recovery began (the only ones a Book may reach). */
  private Set<String> reportedSinceRecovery;
  private long recoveryEndsAtMillis;
  /** The Books the previous incarnation had queued, to be answered (UNAVAILABLE RECOVERING) by the caller. */
  private List<QueuedBook> recoveredQueue = List.of();
  /** Busy and eligible ranks of the last {@link #poolBusy} check (for explain). */
  private int lastBusyRanks;
  private int lastEligibleRanks;

  /**
   * A fresh state.
   *
   * @param publisher receives every new view (the node-local registry); called before the command that caused it
   *     is answered
   * @param attemptFloor the highest attempt an earlier incarnation of this model's state issued (0: none); every
   *     attempt this state issues is above it
   * @param epoch this incarnation's epoch (a fresh one takes the clock's millis)
   */
  public AdmissionState(String model, AdmissionSettings settings, Clock clock, KvOverlapSource overlapSource,
      Consumer<SelectionView> publisher, long attemptFloor, long epoch) {
    this(model, settings, clock, overlapSource, publisher, epoch, new BookingLedger(attemptFloor), null);
  }

  /** A fresh state whose epoch is the clock's millis. */
  public AdmissionState(String model, AdmissionSettings settings, Clock clock, KvOverlapSource overlapSource,
      Consumer<SelectionView> publisher, long attemptFloor) {
    this(model, settings, clock, overlapSource, publisher, attemptFloor, clock.millis());
  }

  /** @param recoveredView the membership to start from (published by the caller once loads are restored), or null */
  private AdmissionState(String model, AdmissionSettings settings, Clock clock, KvOverlapSource overlapSource,
      Consumer<SelectionView> publisher, long epoch, BookingLedger ledger, ViewState recoveredView) {
    this.model = model;
    this.settings = settings;
    this.clock = clock;
    this.epoch = epoch;
    this.overlapSource = overlapSource;
    this.replication = new ReplicationLog(model, epoch, settings.replicated());
    long heartbeatTimeout = settings.heartbeatTimeout().toMillis();
    this.membership = recoveredView == null
        ? Membership.fresh(model, epoch, heartbeatTimeout, overlapSource, activePrefix, publisher, replication)
        : Membership.of(recoveredView, heartbeatTimeout, overlapSource, activePrefix, publisher, replication);
    this.ledger = ledger;
    ledger.replicateTo(replication);
    this.queue = new AdmissionQueue(membership.policy().queue());
    queue.replicateTo(replication);
    sessions.replicateTo(replication);
  }

  /**
   * A new incarnation built from a replica's copy: epoch {@code max(recovered epoch + 1, clock)}; the recovered
   * workers and policy; the ledger rebuilt (attempts above the recovered highest); every rank's booked load
   * recomputed from the recovered bookings (not taken from the replicated records); the last engine reports carried;
   * the active-prefix index and the overlap source fed from the recovered bookings. It starts in recovery mode
   * ({@link #recovering()}) for at most {@code recoveryWindow}.
   */
  public static AdmissionState recover(String model, AdmissionSettings settings, Clock clock,
      KvOverlapSource overlap, Consumer<SelectionView> publisher, RecoveredState recovered, Duration recoveryWindow) {
    ViewState old = recovered.view();
    long epoch = Math.max(old.epoch() + 1, clock.millis());
    ViewState view = new ViewState(model, epoch, 1, old.workers(), old.policy(), old.parameters());
    AdmissionState state = new AdmissionState(model, settings, clock, overlap, publisher, epoch,
        new BookingLedger(recovered.ledger()), view);
    state.restore(recovered.loads(), recoveryWindow);
    List<SessionBinding> bindings = new ArrayList<>();
    for (SessionBinding binding : recovered.sessions()) {
      if (state.membership.cell(binding.rank()) != null) { // a consistent copy holds no other: its worker's went with it
        bindings.add(binding);
      }
    }
    state.sessions.restore(bindings);
    state.recoveredQueue = recovered.queued();
    for (QueuedBook book : recovered.queued()) {
      state.queue.rejected(book.policyClass(), RoutingError.RECOVERING);
    }
    return state;
  }

  /**
   * The Books that were waiting in the previous incarnation's queue when its copy was taken, once (the next call
   * answers none): they are not resumed; the caller answers each with {@link #recoveredQueueError}.
   */
  public List<QueuedBook> takeRecoveredQueue() {
    List<QueuedBook> taken = recoveredQueue;
    recoveredQueue = List.of();
    return taken;
  }

  /** What a Book left waiting in an earlier incarnation's queue is answered: UNAVAILABLE RECOVERING (retryable). */
  public RoutingError recoveredQueueError() {
    return RoutingError.unavailable(RoutingError.RECOVERING, "model '" + RoutingError.echo(model)
        + "': the admission state moved to a new incarnation while this Book waited in its queue; retry");
  }

  /**
   * Answers every waiting Book with UNAVAILABLE RECOVERING (the state is being handed over: rebalance, shutdown);
   * the answers come out of {@link #drainCompletions}.
   */
  public void rejectQueued() {
    queue.rejectAll(RoutingError.unavailable(RoutingError.RECOVERING, "model '" + RoutingError.echo(model)
        + "': its admission state is moving to another node while this Book waited in its queue; retry"),
        RoutingError.RECOVERING);
  }

  private void restore(List<RankRecord> loads, Duration recoveryWindow) {
    long now = clock.millis();
    for (Booking booking : new ArrayList<>(ledger.all())) {
      Rank decodeRank = booking.decodeRank();
      if (membership.cell(booking.rank) == null || (decodeRank != null && membership.cell(decodeRank) == null)) {
        ledger.close(booking); // cannot happen in a consistent copy: a worker's bookings leave with it
        continue;
      }
      charge(booking, 1);
      activePrefix.add(booking.rank, booking.attempt, booking.sequenceHashes);
      overlapSource.onBooked(booking.rank, booking.sequenceHashes, now);
      if (decodeRank != null) {
        overlapSource.onBooked(decodeRank, booking.sequenceHashes, now);
      }
    }
    for (RankRecord load : loads) {
      membership.restoreReport(load.rank(), load.reported());
    }
    membership.publish();
    awaitingReport = new HashSet<>();
    for (WorkerConfig worker : membership.workers()) {
      awaitingReport.add(worker.workerId());
    }
    reportedSinceRecovery = new HashSet<>();
    recoveryEndsAtMillis = now + recoveryWindow.toMillis();
  }

  public AdmissionState(String model, AdmissionSettings settings, Clock clock) {
    this(model, settings, clock, KvOverlapSource.NONE, view -> {}, 0);
  }

  public SelectionView view() {
    return membership.view();
  }

  /** Books waiting in the admission queue. */
  public int pending() {
    return queue.size();
  }

  /** Whether some class of the model queues (a Book may wait, and needs a reply address kept with it). */
  public boolean queueingEnabled() {
    return queue.config().enabled() || !queue.isEmpty();
  }

  /** The Books waiting in the admission queue, oldest first, as the state's copies keep them. */
  public List<QueuedBook> queuedBooks() {
    return queue.queuedBooks();
  }

  public String model() {
    return model;
  }

  /** This incarnation's epoch: its views, load records and replication sequence numbers are ordered by it first. */
  @Override
  public long epoch() {
    return epoch;
  }

  /**
   * Recovery mode, which a recovered state starts in: a Book may reach only workers that reported load since
   * recovery began (none: UNAVAILABLE {@code RECOVERING}). It ends once every recovered worker has reported (or left)
   * or the recovery window has passed.
   */
  public boolean recovering() {
    if (awaitingReport == null) {
      return false;
    }
    if (awaitingReport.isEmpty() || clock.millis() >= recoveryEndsAtMillis) {
      awaitingReport = null;
      reportedSinceRecovery = null;
      return false;
    }
    return true;
  }

  // ---- replication

  /** Membership, configs and policy as of the current view. */
  public ViewState viewState() {
    return membership.viewState();
  }

  /** Records each Book's selection into {@code log} from now on (null: records none). */
  public void recordDecisionsTo(DecisionLog log) {
    decisions = log;
  }

  /** The seq of the last delta drained in this epoch (0: none yet). */
  @Override
  public long replicationSeq() {
    return replication.seq();
  }

  /**
   * What changed since the previous drain, as consecutive deltas each estimated under {@code maxDeltaBytes} (see
   * {@link ReplicationLog#drain}); empty when nothing did.
   */
  @Override
  public List<ReplicaDelta> drainReplicaDeltas(long nowMillis, int maxDeltaBytes) {
    return replication.drain(nowMillis, membership::viewState, membership::rankRecord, ledger.highestAttempt(),
        maxDeltaBytes);
  }

  /** Forgets what changed since the previous drain, for an owner with no peer: see {@link ReplicationLog#discard}. */
  @Override
  public void discardReplicaDeltas() {
    replication.discard();
  }

  /** An empty delta as the next seq, when nothing is pending: see {@link ReplicationLog#probe}. */
  @Override
  public ReplicaDelta replicaProbe(long nowMillis) {
    return replication.probe(nowMillis, ledger.highestAttempt());
  }

  /**
   * A full copy as of the last drained seq, in chunks of at most {@code maxChunkBytes} estimated bytes
   * ({@link SnapshotChunks}). Callers drain first: changes not yet drained would be in the copy and again in the
   * next delta (harmless, since a delta applied over them changes nothing, but the copy would not be "as of seq").
   */
  @Override
  public List<SnapshotChunk> replicaSnapshot(long nowMillis, int maxChunkBytes) {
    return SnapshotChunks.cut(model, epoch, replication.seq(), nowMillis, membership.viewState(),
        membership.rankRecords(), ledger.snapshot().bookings(), ledger.highestAttempt(), queue.queuedBooks(),
        sessions.all(), maxChunkBytes);
  }

  /** The session bindings, least recently used first. */
  public List<SessionBinding> sessionBindings() {
    return sessions.all();
  }

  /** The ledger's bookings and highest attempt, e.g. to hand a later incarnation its attempt floor. */
  public LedgerSnapshot ledgerSnapshot() {
    return ledger.snapshot();
  }

  /**
   * True once the model holds nothing (no worker, no live booking, no queued Book) and the clock is past the
   * millisecond of the last attempt issued: a later state started from floor 0 then issues only attempts above every
   * one this state issued ({@link AttemptIds} are {@code millis << 16} plus a counter), so the state can be dropped
   * without handing anything on.
   */
  public boolean isDisposable() {
    return membership.workers().isEmpty() && ledger.isEmpty() && queue.isEmpty()
        && (ledger.highestAttempt() >>> 16) < clock.millis();
  }

  // ---- membership and policy

  public Registered register(WorkerConfig config) {
    Registered registered = membership.register(config);
    dispatch(Trigger.WORKER_ADDED); // a new worker, or a new config of one (more capacity), may let Books go
    return registered;
  }

  /** Removes a worker and the live bookings on it; returns how many bookings were dropped. */
  public int deregister(String workerId) {
    // a pair with one half on this worker leaves with it: its other half's load is freed while both cells exist
    int pairsDropped = 0;
    for (Booking booking : new ArrayList<>(ledger.all())) {
      Rank decodeRank = booking.decodeRank();
      if (decodeRank != null && (booking.rank.workerId().equals(workerId)
          || decodeRank.workerId().equals(workerId))) {
        free(booking);
        pairsDropped++;
      }
    }
    membership.deregister(workerId);
    if (awaitingReport != null) {
      awaitingReport.remove(workerId);
      reportedSinceRecovery.remove(workerId);
    }
    activePrefix.removeWorker(workerId);
    overlapSource.removeWorker(workerId);
    int dropped = ledger.dropWorker(workerId) + pairsDropped;
    sessions.dropWorker(workerId);
    dispatch(Trigger.WORKER_REMOVED);
    return dropped;
  }

  public void reportLoad(String workerId, List<RankReport> ranks) {
    membership.reportLoad(workerId, ranks, clock.millis());
    if (awaitingReport != null) {
      awaitingReport.remove(workerId);
      reportedSinceRecovery.add(workerId);
    }
    dispatch(Trigger.LOAD_REPORT);
  }

  /**
   * Switches policy and/or parameters; bookings, loads and the queue are kept (every waiting Book put in its class
   * under the new parameters). Returns the new view version.
   */
  public long setPolicy(String policyName, Map<String, String> parameters) {
    long version = membership.setPolicy(policyName, parameters);
    queue.configure(membership.policy().queue());
    if (!membership.policy().session().enabled()) {
      sessions.clear();
    }
    dispatch(Trigger.POLICY);
    return version;
  }

  // ---- booking

  /**
   * Books {@code request}: a replay when its request id is live (re-bound to {@code nonce}), queued when its class
   * queues and the pool is busy or the class has a backlog, else selected and booked at once.
   *
   * @param deadlineMillis the caller's deadline on this state's clock, or 0 for none (queue waits end before it)
   */
  public BookOutcome book(SelectionRequest request, long nonce, long deadlineMillis) {
    return book(request, nonce, deadlineMillis, "");
  }

  /**
   * As above; {@code replyTo} is where the caller waits (opaque here), kept with a queued Book so that the next
   * incarnation can answer it if this one ends first ({@link #takeRecoveredQueue}).
   */
  public BookOutcome book(SelectionRequest request, long nonce, long deadlineMillis, String replyTo) {
    long now = clock.millis();
    if (deadlineMillis > 0 && now >= deadlineMillis) {
      // the caller has given up (its ask timed out): booking now would leave a booking nobody releases
      return new BookOutcome.Rejected(new RoutingError(RoutingError.Code.DEADLINE_EXCEEDED,
          RoutingError.ADMISSION_TIMEOUT, "the Book reached admission after its deadline"));
    }
    Booking live = ledger.live(request.requestId());
    if (live != null) {
      ledger.bind(live, nonce, request.retry());
      return new BookOutcome.Booked(answer(live, true, null));
    }
    queue.supersede(request.requestId());
    if (view().isEmpty()) {
      return new BookOutcome.Rejected(RoutingError.unknownModel(model));
    }
    QueueConfig config = queue.config();
    if (!config.enabled()) {
      return selectAndBook(request, nonce, now, 0, PolicyClass.DEFAULT, null);
    }
    boolean projected = project(request, now);
    int cached = projected && config.needsCachedTokens() ? Selector.bestCachedTokens(view(), request, scratch) : 0;
    AdmissionQueue.ClassQueue cq = queue.classFor(request.policyClass(), Math.max(0, request.islTokens() - cached));
    PolicyClass cls = cq.config;
    if (!cls.queueingEnabled()) {
      return selectAndBook(request, nonce, now, 0, cls.name(), null);
    }
    boolean backlog = cq.size > 0;
    boolean busy = projected ? countBusy(cls) : projectionBusy;
    if (!backlog && !busy) {
      return selectAndBook(request, nonce, now, 0, cls.name(), null);
    }
    RoutingError refusal = queue.refusal(cq, membership.workers().size());
    if (refusal != null) {
      return new BookOutcome.Rejected(refusal);
    }
    queue.enqueue(cq, request.requestId(), nonce, request, replyTo, deadlineMillis, now, request.islTokens(),
        cached, backlog ? AdmissionQueue.Reason.BACKLOG : AdmissionQueue.Reason.ALL_BUSY, lastBusyRanks,
        lastEligibleRanks);
    dispatch(Trigger.ENQUEUE); // another lane of its class, or its own, may be able to go
    BookOutcome decided = queue.takeCompletion(nonce);
    return decided != null ? decided : new BookOutcome.Queued(cq.size);
  }

  private BookOutcome selectAndBook(SelectionRequest request, long nonce, long now, long queuedMicros,
      String policyClass, QueueWait wait) {
    SelectionView view = view();
    SessionConfig sessionConfig = membership.policy().session();
    SessionAffinity session = sessionConfig.enabled() ? request.session() : null;
    SessionMode mode = session == null ? null : sessionConfig.modeFor(session.mode());
    SessionBinding binding = session == null ? null : sessions.live(session.sessionId(), now);
    Rank left = null; // the rank of a binding found invalid before selection
    SelectionResult selection;
    try {
      SelectionRequest admissible = admissible(request);
      if (binding != null && membership.cell(binding.rank()) == null) {
        sessions.invalidate(session.sessionId()); // its rank is gone (deregister ends its worker's bindings already)
        left = binding.rank();
        binding = null;
      }
      if (binding != null && recovering() && !reportedSinceRecovery.contains(binding.rank().workerId())) {
        // keep the session for its worker, which has not reported since the failover yet, rather than move it
        throw RoutingError.unavailable(RoutingError.RECOVERING, "model '" + RoutingError.echo(model)
            + "' is recovering its admission state: the worker session '" + RoutingError.echo(session.sessionId())
            + "' is bound to has not reported load since; retry shortly").toException();
      }
      if (binding != null && mode == SessionMode.HARD && pinAllows(admissible, binding.rank())) {
        try {
          selection = select(view, admissible.withPinnedRank(binding.rank()), now, wait);
        } catch (RoutingException e) {
          if (!rebindsHard(e.error())) {
            throw e;
          }
          sessions.invalidate(session.sessionId()); // the bound rank is not eligible: rebind, once
          left = binding.rank();
          binding = null;
          selection = select(view, admissible, now, wait);
        }
      } else if (binding != null && mode == SessionMode.SOFT && pinAllows(admissible, binding.rank())
          && membership.policy().policy().scorer() == io.kvrouter.core.policy.Scorer.NONE) {
        // a policy that weighs no cost (round_robin, random): the preference is to keep the bound rank while it is
        // eligible, else the policy's pick (rebound)
        try {
          selection = select(view, admissible.withPinnedRank(binding.rank()), now, wait);
        } catch (RoutingException e) {
          if (RoutingError.RECOVERING.equals(e.error().reason())) {
            throw e;
          }
          selection = select(view, admissible, now, wait);
        }
      } else if (binding != null && mode == SessionMode.SOFT) {
        selection = select(view, admissible.withSession(session.preferring(binding.rank(),
            sessionConfig.softFactor())), now, wait);
      } else {
        selection = select(view, admissible, now, wait);
      }
    } catch (RoutingException e) {
      return new BookOutcome.Rejected(e.error());
    }
    SessionOutcome outcome = null;
    if (session != null) {
      sessions.bind(session.sessionId(), selection.rank(), now, sessionConfig.idleTtlMillis(),
          sessionConfig.maxBindings(), left != null);
      Rank previous = binding != null ? binding.rank() : left;
      SessionOutcome.Kind kind = previous == null ? SessionOutcome.Kind.BOUND
          : previous.equals(selection.rank()) ? SessionOutcome.Kind.KEPT : SessionOutcome.Kind.REBOUND;
      outcome = new SessionOutcome(session.sessionId(), mode, kind,
          kind == SessionOutcome.Kind.REBOUND ? previous : null);
    }
    long prefill = Math.max(request.islTokens() - selection.cachedTokens(), 0);
    long decode = Scorers.requestBlocks(request.islTokens(), view.blockSize());
    SelectionResult booked;
    if (selection.disaggregated()) {
      // the prefill rank holds the prompt's prefill (no blocks: Dynamo's prefill router tracks no active blocks), the
      // decode rank the request's blocks (no prefill: it receives the KV)
      RankLoad prefillAfter = membership.addBooking(selection.rank(), prefill, 0, now);
      RankLoad decodeAfter = membership.addBooking(selection.decode().rank(), 0, decode, now);
      booked = selection.withLoad(prefillAfter).withDecode(selection.decode().withLoad(decodeAfter));
    } else {
      booked = selection.withLoad(membership.addBooking(selection.rank(), prefill, decode, now));
    }
    Booking booking = ledger.open(request.requestId(), selection.rank(), prefill, decode, now, queuedMicros,
        booked, nonce, request.retry(), now + settings.lease().toMillis(), request.blockHashes(), policyClass);
    activePrefix.add(booking.rank, booking.attempt, booking.sequenceHashes);
    overlapSource.onBooked(booking.rank, booking.sequenceHashes, now);
    if (booking.decodeRank() != null) {
      overlapSource.onBooked(booking.decodeRank(), booking.sequenceHashes, now);
    }
    return new BookOutcome.Booked(answer(booking, false, outcome));
  }

  /**
   * One selection (a single rank or a prefill/decode pair, {@link DisaggregatedSelection}), recorded for explain
   * when decisions are kept.
   */
  private SelectionResult select(SelectionView view, SelectionRequest request, long now, QueueWait wait) {
    SelectionResult selection = DisaggregatedSelection.select(view, request, scratch, decodeScratch, () -> now);
    if (decisions != null) {
      decisions.record(DecisionKind.BOOK, view, request, scratch, now, wait);
      if (selection.disaggregated()) {
        decisions.record(DecisionKind.BOOK_DECODE, view,
            DisaggregatedSelection.half(view, request, WorkerRole.DECODE), decodeScratch, now, wait);
      }
    }
    return selection;
  }

  /**
   * Whether a hard binding's failed pick rebinds the session: its rank is gone, filtered for this request (not
   * allowed, excluded) or unavailable; an overloaded rank is the bound rank's answer (hard: that rank or nothing),
   * recovery a transient one.
   */
  private static boolean rebindsHard(RoutingError error) {
    String reason = error.reason();
    return !RoutingError.PINNED_WORKER_OVERLOADED.equals(reason) && !RoutingError.RECOVERING.equals(reason)
        && error.code() != RoutingError.Code.DEADLINE_EXCEEDED;
  }

  /**
   * Whether a session binding to {@code bound} may pin {@code request}: a pin of the request's own wins (a pinned
   * worker, or a pinned dp rank that {@code bound} is not).
   */
  private static boolean pinAllows(SelectionRequest request, Rank bound) {
    return request.pinnedWorker() == null
        && (request.pinnedDpRank() == null || request.pinnedDpRank() == bound.dpRank());
  }

  /**
   * {@code request} as recovery mode allows it: limited (through its allowed workers, so selection keeps one copy
   * of its rules) to the workers that reported since recovery began; unchanged outside recovery.
   *
   * @throws RoutingException UNAVAILABLE {@code RECOVERING} when no worker the request may reach has reported yet
   */
  private SelectionRequest admissible(SelectionRequest request) {
    if (!recovering()) {
      return request;
    }
    String pinned = request.pinnedWorker();
    Set<String> allowed = new HashSet<>(reportedSinceRecovery);
    if (!request.allowedWorkers().isEmpty()) {
      allowed.retainAll(request.allowedWorkers());
    }
    if (allowed.isEmpty() || (pinned != null && !reportedSinceRecovery.contains(pinned))) {
      throw RoutingError.unavailable(RoutingError.RECOVERING, "model '" + RoutingError.echo(model)
          + "' is recovering its admission state: no worker it may book has reported load since; retry shortly")
          .toException();
    }
    return request.withAllowedWorkers(allowed);
  }

  /**
   * A replay carries the rank's load now, not at booking time: the booking may come from an earlier incarnation,
   * whose load records are numbered differently, and a relaying node applies the answer's load to its view.
   */
  private BookingAnswer answer(Booking booking, boolean replay, SessionOutcome session) {
    SelectionResult selection = booking.selection;
    if (replay) {
      selection = selection.withLoad(membership.cell(booking.rank).booked());
      if (selection.decode() != null) {
        selection = selection.withDecode(selection.decode().withLoad(membership.cell(booking.decodeRank()).booked()));
      }
    }
    return new BookingAnswer(selection, booking.requestId, booking.attempt, replay, booking.queuedMicros,
        booking.leaseExpiresAtMillis, epoch, booking.policyClass, session);
  }

  // ---- fenced mutations

  public MutationResult release(String requestId, long attempt) {
    Booking booking = ledger.fenced(requestId, attempt);
    if (booking == null) {
      return MutationResult.NOT_APPLIED;
    }
    free(booking);
    dispatch(Trigger.RELEASE);
    return loadsOf(booking, 0);
  }

  /** Drops the booking's prefill load (blocks stay) and renews its lease; a second call changes nothing. */
  public MutationResult markPrefillDone(String requestId, long attempt) {
    Booking booking = ledger.fenced(requestId, attempt);
    if (booking == null || booking.prefillDone) {
      return MutationResult.NOT_APPLIED;
    }
    if (booking.decodeRank() != null) {
      // a pair's prefill rank is done with the request: its slot and prefill are freed, the decode rank keeps it
      // (its prefix stays active on the prefill rank until the pair is released, as a single rank's does)
      membership.addLoad(booking.rank, -1, -booking.prefillTokens, 0);
    } else {
      membership.addLoad(booking.rank, 0, -booking.prefillTokens, 0);
    }
    ledger.markPrefillDone(booking, clock.millis() + settings.lease().toMillis());
    dispatch(Trigger.PREFILL_DONE);
    return new MutationResult(true, booking.leaseExpiresAtMillis,
        new LoadUpdate(epoch, booking.rank, membership.cell(booking.rank).booked()), null);
  }

  public MutationResult renew(String requestId, long attempt) {
    Booking booking = ledger.fenced(requestId, attempt);
    if (booking == null) {
      return MutationResult.NOT_APPLIED;
    }
    ledger.renew(booking, clock.millis() + settings.lease().toMillis());
    return new MutationResult(true, booking.leaseExpiresAtMillis, null);
  }

  /**
   * Undoes what the Book with this nonce made: its queue entry, or its share of the booking: the call no longer holds
   * it, and the booking is freed once no call it was answered to does (a replay, made before or after, keeps it).
   * Returns whether a queue entry or the booking was dropped.
   */
  public boolean cancelBook(String requestId, long nonce) {
    Booking booking = ledger.live(requestId);
    if (booking != null && booking.nonces.contains(nonce)) {
      if (!ledger.unbindIsLast(booking, nonce)) {
        return false;
      }
      free(booking);
      dispatch(Trigger.CANCEL);
      return true;
    }
    return queue.cancel(requestId, nonce);
  }

  /** Closes the booking and takes its load off its rank (a pair: off both ranks). */
  private void free(Booking booking) {
    ledger.close(booking);
    activePrefix.remove(booking.rank, booking.attempt);
    charge(booking, -1);
  }

  /**
   * Adds ({@code sign} 1) or takes off (-1) what {@code booking} holds: a single rank one request, its prefill
   * until done and its blocks; a pair's prefill rank one request and its prefill until the prefill is done, its
   * decode rank one request and the blocks.
   */
  private void charge(Booking booking, int sign) {
    Rank decodeRank = booking.decodeRank();
    if (decodeRank == null) {
      membership.addLoad(booking.rank, sign, sign * booking.heldPrefillTokens(), sign * booking.decodeBlocks);
      return;
    }
    if (!booking.prefillDone) {
      membership.addLoad(booking.rank, sign, sign * booking.prefillTokens, 0);
    }
    membership.addLoad(decodeRank, sign, 0, sign * booking.decodeBlocks);
  }

  /** A mutation's answer carrying the booking's ranks' loads now. */
  private MutationResult loadsOf(Booking booking, long leaseExpiresAtMillis) {
    Rank decodeRank = booking.decodeRank();
    return new MutationResult(true, leaseExpiresAtMillis,
        new LoadUpdate(epoch, booking.rank, membership.cell(booking.rank).booked()),
        decodeRank == null ? null : new LoadUpdate(epoch, decodeRank, membership.cell(decodeRank).booked()));
  }

  /** Expires bookings past their lease and queued Books past their deadline; returns the number of bookings expired. */
  public int expire() {
    long now = clock.millis();
    List<Booking> expired = ledger.expiredAt(now);
    expired.forEach(this::free);
    expiredBookings += expired.size();
    overlapSource.expire(now);
    sessions.expire(now);
    dispatch(Trigger.EXPIRY);
    return expired.size();
  }

  // ---- the queue

  /** What may have freed capacity for a dispatch (explain's {@code dispatched_by}). */
  private enum Trigger { RELEASE, PREFILL_DONE, LOAD_REPORT, WORKER_ADDED, WORKER_REMOVED, POLICY, EXPIRY, CANCEL,
    ENQUEUE }

  /** Whether the last {@link #project} that failed left a busy pool (every rank overloaded, or none reported yet). */
  private boolean projectionBusy;

  /**
   * Projects the ranks {@code request} may go to into the scratch; false when the projection refused it (then
   * {@link #projectionBusy} and the last counts say whether that refusal means busy: every eligible rank overloaded,
   * or recovery with no worker reported yet; any other refusal is the selection's to report).
   */
  private boolean project(SelectionRequest request, long now) {
    try {
      LoadProjection.projectWorkerLoads(view(), admissible(request), scratch, now);
      return true;
    } catch (RoutingException e) {
      String reason = e.error().reason();
      boolean overloaded = RoutingError.ALL_WORKERS_OVERLOADED.equals(reason)
          || RoutingError.PINNED_WORKER_OVERLOADED.equals(reason);
      projectionBusy = overloaded || RoutingError.RECOVERING.equals(reason);
      lastBusyRanks = overloaded ? overloadedRanks() : 0;
      lastEligibleRanks = lastBusyRanks;
      return false;
    }
  }

  /**
   * Whether the pool the scratch holds is busy for {@code cls}: every candidate (or at least its busy-worker ratio of
   * them) is above one of the class's thresholds, ranks the overload filter removed counting as busy ones.
   */
  private boolean countBusy(PolicyClass cls) {
    SelectionView view = view();
    int overloaded = overloadedRanks();
    int busy = overloaded;
    for (int i = 0; i < scratch.size(); i++) {
      if (cls.busy().exceeded(view.rankWorker(scratch.rankIndex(i)), scratch.prefillTokens(i),
          scratch.decodeBlocks(i))) {
        busy++;
      }
    }
    int eligible = scratch.size() + overloaded;
    lastBusyRanks = busy;
    lastEligibleRanks = eligible;
    if (eligible == 0) {
      return false;
    }
    Double ratio = cls.busyWorkerRatio();
    return ratio == null ? busy == eligible : busy >= ratio * eligible;
  }

  private int overloadedRanks() {
    int overloaded = 0;
    for (int i = 0; i < scratch.filteredCount(); i++) {
      if (scratch.filteredReason(i) == FilterReason.OVERLOADED) {
        overloaded++;
      }
    }
    return overloaded;
  }

  /** Whether a queued Book's class lets it go now (its pool is not busy for it). */
  private boolean dispatchable(AdmissionQueue.Entry entry, long now) {
    PolicyClass cls = entry.policyClass();
    if (!cls.queueingEnabled()) {
      return true;
    }
    return project(entry.request, now) ? !countBusy(cls) : !projectionBusy;
  }

  /**
   * Rejects queued Books past their deadline, ages the long-waiting ones, then admits queued Books by deficit round
   * robin while their pools have capacity.
   */
  private void dispatch(Trigger trigger) {
    if (queue.isEmpty()) {
      return;
    }
    long now = clock.millis();
    queue.shedExpired(now);
    queue.promoteAged(now);
    while (true) {
      AdmissionQueue.Entry entry = queue.popNext(e -> dispatchable(e, now));
      if (entry == null) {
        return;
      }
      long waitedMicros = Math.max(0, now - entry.enqueuedAtMillis) * 1000;
      QueueWait wait = new QueueWait(entry.policyClass().name(), entry.request.strictPriority(),
          entry.request.priority(), entry.reason.name(), entry.busyRanks, entry.eligibleRanks, entry.queuedAhead,
          entry.uncachedTokens(), entry.aged, waitedMicros, trigger.name());
      BookOutcome outcome = selectAndBook(entry.request, entry.nonce, now, waitedMicros, entry.policyClass().name(),
          wait);
      queue.dispatched(entry, outcome instanceof BookOutcome.Booked, waitedMicros);
      queue.complete(entry.nonce, outcome);
    }
  }

  /** Queued Books decided since the last call, to be answered by the caller. */
  public List<Completion> drainCompletions() {
    return queue.drainCompletions();
  }

  // ---- inspection

  public ModelSnapshot snapshot() {
    long now = clock.millis();
    Map<Rank, Integer> live = new HashMap<>();
    List<ModelSnapshot.BookingSnapshot> bookingList = new ArrayList<>();
    for (Booking b : ledger.all()) {
      if (b.decodeRank() == null || !b.prefillDone) {
        live.merge(b.rank, 1, Integer::sum);
      }
      if (b.decodeRank() != null) {
        live.merge(b.decodeRank(), 1, Integer::sum);
      }
      bookingList.add(new ModelSnapshot.BookingSnapshot(b.requestId, b.attempt, b.rank.workerId(), b.rank.dpRank(),
          b.heldPrefillTokens(), b.decodeBlocks, b.prefillDone, b.bookedAtMillis, b.leaseExpiresAtMillis,
          b.decodeRank()));
    }
    PolicyConfig policy = membership.policy();
    List<ModelSnapshot.WorkerSnapshot> workerList = new ArrayList<>();
    for (WorkerConfig worker : membership.workers()) {
      List<ModelSnapshot.RankSnapshot> ranks = new ArrayList<>();
      boolean available = false;
      for (int r = worker.dpStart(); r < worker.dpStart() + worker.dpSize(); r++) {
        Rank rank = worker.rank(r);
        LoadCell cell = membership.cell(rank);
        ReportedLoad reported = cell.reported();
        available |= LoadProjection.isAvailable(reported, settings.heartbeatTimeout().toMillis(), now);
        ranks.add(new ModelSnapshot.RankSnapshot(r, cell.booked(), live.getOrDefault(rank, 0),
            LoadProjection.isOverloaded(policy, worker, cell.booked(), reported), reported));
      }
      workerList.add(new ModelSnapshot.WorkerSnapshot(worker, available, ranks));
    }
    return new ModelSnapshot(model, policy.policy().wireName(), policy.toParameters(), membership.viewVersion(),
        view().blockSize(), workerList, bookingList, queue.size(), expiredBookings, epoch, recovering(),
        queue.snapshot(now, membership.workers().size()),
        new ModelSnapshot.SessionsSnapshot(sessions.size(), policy.session().maxBindings(), sessions.counters(),
            sessions.recent(ModelSnapshot.SessionsSnapshot.MAX_LISTED)));
  }
}
