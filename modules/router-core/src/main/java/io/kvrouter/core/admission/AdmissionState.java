package io.kvrouter.core.admission;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.policy.PolicyConfig;
import io.kvrouter.core.policy.Scorers;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.sequences.ActivePrefixIndex;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A model's authoritative admission state, composed of its {@link Membership} (workers, load cells, policy, the
 * published view), its {@link BookingLedger} and its {@link PendingQueue}; this class holds the rules that tie them
 * together (book, fenced mutations, leases, queue dispatch). Single-threaded (the admission actor is its only
 * caller); inline readers see it only through the published {@link SelectionView} and the load cells, which are
 * written before any answer leaves.
 *
 * <p>A Book carries a nonce so a caller that gave up can cancel exactly what it made. Queued Books that get decided
 * later surface as {@link Completion}s.
 */
public final class AdmissionState {
  private final String model;
  private final AdmissionSettings settings;
  private final Clock clock;
  private final KvOverlapSource overlapSource;
  private final ActivePrefixIndex activePrefix = new ActivePrefixIndex();
  private final Membership membership;
  private final BookingLedger ledger;
  private final PendingQueue queue = new PendingQueue();
  private final Candidates scratch = new Candidates();
  private long expiredBookings;

  /**
   * @param publisher receives every new view (the node-local registry); called before the command that caused it
   *     is answered
   * @param attemptFloor the highest attempt an earlier incarnation of this model's state issued (0: none); every
   *     attempt this state issues is above it
   */
  public AdmissionState(String model, AdmissionSettings settings, Clock clock, KvOverlapSource overlapSource,
      Consumer<SelectionView> publisher, long attemptFloor) {
    this.model = model;
    this.settings = settings;
    this.clock = clock;
    this.overlapSource = overlapSource;
    this.membership = new Membership(model, settings.heartbeatTimeout().toMillis(), overlapSource, activePrefix,
        publisher);
    this.ledger = new BookingLedger(attemptFloor);
  }

  public AdmissionState(String model, AdmissionSettings settings, Clock clock) {
    this(model, settings, clock, KvOverlapSource.NONE, view -> {}, 0);
  }

  public SelectionView view() {
    return membership.view();
  }

  public String model() {
    return model;
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
    if (registered.created()) {
      dispatch();
    }
    return registered;
  }

  /** Removes a worker and the live bookings on it; returns how many bookings were dropped. */
  public int deregister(String workerId) {
    membership.deregister(workerId);
    activePrefix.removeWorker(workerId);
    overlapSource.removeWorker(workerId);
    int dropped = ledger.dropWorker(workerId);
    dispatch();
    return dropped;
  }

  public void reportLoad(String workerId, List<RankReport> ranks) {
    membership.reportLoad(workerId, ranks, clock.millis());
    dispatch();
  }

  /** Switches policy and/or parameters; bookings, loads and the queue are kept. Returns the new view version. */
  public long setPolicy(String policyName, Map<String, String> parameters) {
    long version = membership.setPolicy(policyName, parameters);
    dispatch();
    return version;
  }

  // ---- booking

  /**
   * Books {@code request}: a replay when its request id is live (re-bound to {@code nonce}), queued when queueing is
   * on and the pool is busy or the class has a backlog, else selected and booked at once.
   *
   * @param deadlineMillis the caller's deadline on this state's clock, or 0 for none (queue waits end before it)
   */
  public BookOutcome book(SelectionRequest request, long nonce, long deadlineMillis) {
    long now = clock.millis();
    if (deadlineMillis > 0 && now >= deadlineMillis) {
      // the caller has given up (its ask timed out): booking now would leave a booking nobody releases
      return new BookOutcome.Rejected(new RoutingError(RoutingError.Code.DEADLINE_EXCEEDED,
          RoutingError.ADMISSION_TIMEOUT, "the Book reached admission after its deadline"));
    }
    Booking live = ledger.live(request.requestId());
    if (live != null) {
      live.nonce = nonce;
      return new BookOutcome.Booked(answer(live, true));
    }
    queue.supersede(request.requestId());
    if (view().isEmpty()) {
      return new BookOutcome.Rejected(RoutingError.unknownModel(model));
    }
    PolicyConfig policy = membership.policy();
    if (queueingEnabled() && (!queue.isEmpty() || allCandidatesBusy(request, now))) {
      if (queue.size() >= policy.maxPending()) {
        return new BookOutcome.Rejected(new RoutingError(RoutingError.Code.RESOURCE_EXHAUSTED,
            RoutingError.QUEUE_LIMIT, "queue limit max_pending reached: " + queue.size() + " pending of "
                + policy.maxPending()));
      }
      return new BookOutcome.Queued(queue.enqueue(
          new PendingQueue.Pending(request.requestId(), nonce, request, deadlineMillis, now)));
    }
    return selectAndBook(request, nonce, now, 0);
  }

  private BookOutcome selectAndBook(SelectionRequest request, long nonce, long now, long queuedMicros) {
    SelectionView view = view();
    SelectionResult selection;
    try {
      selection = Selector.select(view, request, scratch, now);
    } catch (RoutingException e) {
      return new BookOutcome.Rejected(e.error());
    }
    long prefill = Math.max(request.islTokens() - selection.cachedTokens(), 0);
    long decode = Scorers.requestBlocks(request.islTokens(), view.blockSize());
    RankLoad after = membership.addLoad(selection.rank(), 1, prefill, decode);
    Booking booking = ledger.open(request.requestId(), selection.rank(), prefill, decode, now, queuedMicros,
        selection.withLoad(after), nonce, now + settings.lease().toMillis(), request.blockHashes());
    activePrefix.add(booking.rank, booking.attempt, booking.sequenceHashes);
    overlapSource.onBooked(booking.rank, booking.sequenceHashes, now);
    return new BookOutcome.Booked(answer(booking, false));
  }

  private static BookingAnswer answer(Booking booking, boolean replay) {
    return new BookingAnswer(booking.selection, booking.requestId, booking.attempt, replay, booking.queuedMicros,
        booking.leaseExpiresAtMillis);
  }

  // ---- fenced mutations

  public MutationResult release(String requestId, long attempt) {
    Booking booking = ledger.fenced(requestId, attempt);
    if (booking == null) {
      return MutationResult.NOT_APPLIED;
    }
    free(booking);
    dispatch();
    return new MutationResult(true, 0);
  }

  /** Drops the booking's prefill load (blocks stay) and renews its lease; a second call changes nothing. */
  public MutationResult markPrefillDone(String requestId, long attempt) {
    Booking booking = ledger.fenced(requestId, attempt);
    if (booking == null || booking.prefillDone) {
      return MutationResult.NOT_APPLIED;
    }
    membership.addLoad(booking.rank, 0, -booking.prefillTokens, 0);
    booking.prefillDone = true;
    booking.leaseExpiresAtMillis = clock.millis() + settings.lease().toMillis();
    dispatch();
    return new MutationResult(true, booking.leaseExpiresAtMillis);
  }

  public MutationResult renew(String requestId, long attempt) {
    Booking booking = ledger.fenced(requestId, attempt);
    if (booking == null) {
      return MutationResult.NOT_APPLIED;
    }
    booking.leaseExpiresAtMillis = clock.millis() + settings.lease().toMillis();
    return new MutationResult(true, booking.leaseExpiresAtMillis);
  }

  /**
   * Undoes what the Book with this nonce made: its queue entry, or its booking if no later call re-bound it. Returns
   * whether anything was dropped; a superseded nonce is a no-op.
   */
  public boolean cancelBook(String requestId, long nonce) {
    Booking booking = ledger.live(requestId);
    if (booking != null && booking.nonce == nonce) {
      free(booking);
      dispatch();
      return true;
    }
    return queue.cancel(requestId, nonce);
  }

  private void free(Booking booking) {
    ledger.close(booking);
    activePrefix.remove(booking.rank, booking.attempt);
    membership.addLoad(booking.rank, -1, -booking.heldPrefillTokens(), -booking.decodeBlocks);
  }

  /** Expires bookings past their lease and queued Books past their deadline; returns the number of bookings expired. */
  public int expire() {
    long now = clock.millis();
    List<Booking> expired = ledger.expiredAt(now);
    expired.forEach(this::free);
    expiredBookings += expired.size();
    overlapSource.expire(now);
    dispatch();
    return expired.size();
  }

  // ---- the queue

  private boolean queueingEnabled() {
    return membership.policy().queueThresholdFrac() != null;
  }

  /** True when every candidate for the request holds more prefill tokens than the queue threshold allows. */
  private boolean allCandidatesBusy(SelectionRequest request, long now) {
    SelectionView view = view();
    try {
      LoadProjection.projectWorkerLoads(view, request, scratch, now);
    } catch (RoutingException e) {
      return false; // selecting it reports the error
    }
    double frac = membership.policy().queueThresholdFrac();
    for (int i = 0; i < scratch.size(); i++) {
      if (scratch.prefillTokens(i) <= frac * view.rankWorker(scratch.rankIndex(i)).maxNumBatchedTokens()) {
        return false;
      }
    }
    return true;
  }

  /** Admits queued Books in FCFS order while capacity allows; expired heads are rejected. */
  private void dispatch() {
    long now = clock.millis();
    while (!queue.isEmpty()) {
      PendingQueue.Pending head = queue.head();
      if (head.deadlineMillis() > 0 && now >= head.deadlineMillis()) {
        queue.pollHead();
        queue.complete(head.nonce(), new BookOutcome.Rejected(new RoutingError(
            RoutingError.Code.DEADLINE_EXCEEDED, RoutingError.QUEUE_DEADLINE_EXCEEDED,
            "waited " + (now - head.enqueuedAtMillis()) + " ms in the queue past the deadline")));
        continue;
      }
      if (queueingEnabled() && allCandidatesBusy(head.request(), now)) {
        return;
      }
      queue.pollHead();
      long queuedMicros = (now - head.enqueuedAtMillis()) * 1000;
      queue.complete(head.nonce(), selectAndBook(head.request(), head.nonce(), now, queuedMicros));
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
      live.merge(b.rank, 1, Integer::sum);
      bookingList.add(new ModelSnapshot.BookingSnapshot(b.requestId, b.attempt, b.rank.workerId(), b.rank.dpRank(),
          b.heldPrefillTokens(), b.decodeBlocks, b.prefillDone, b.bookedAtMillis, b.leaseExpiresAtMillis));
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
        view().blockSize(), workerList, bookingList, queue.size(), expiredBookings);
  }
}
