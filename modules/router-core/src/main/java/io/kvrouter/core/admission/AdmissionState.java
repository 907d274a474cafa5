package io.kvrouter.core.admission;

import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.policy.PickerSlot;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.policy.Scorers;
import io.kvrouter.core.policy.PolicyConfig;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.sequences.ActivePrefixIndex;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;

/**
 * A model's authoritative admission state: workers, the booking ledger, per-rank loads, the pending queue and the
 * policy. Single-threaded (the admission actor is its only caller); inline readers see it only through the published
 * {@link SelectionView} and the load cells, which this class writes before any answer leaves.
 *
 * <p>Every mutation of a booking is fenced by (request_id, attempt); a Book carries a nonce so a caller that gave up
 * can cancel exactly what it made. Queued Books that get decided later surface as {@link Completion}s.
 */
public final class AdmissionState {
  private final String model;
  private final AdmissionSettings settings;
  private final Clock clock;
  private final KvOverlapSource overlapSource;
  private final ActivePrefixIndex activePrefix = new ActivePrefixIndex();
  private final Consumer<SelectionView> publisher;
  private final TreeMap<String, WorkerConfig> workers = new TreeMap<>();
  private final Map<Rank, LoadCell> cells = new HashMap<>();
  private final LinkedHashMap<String, Booking> bookings = new LinkedHashMap<>();
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  private final List<Completion> completions = new ArrayList<>();
  private final AttemptIds attempts = new AttemptIds();
  private final Candidates scratch = new Candidates();
  private PolicyConfig policy = PolicyConfig.defaults();
  private PickerSlot picker;
  private long viewVersion;
  private long loadSeq;
  private long expiredBookings;
  private SelectionView view;

  private record Pending(String requestId, long nonce, SelectionRequest request, long deadlineMillis,
      long enqueuedAtMillis) {}

  /**
   * @param publisher receives every new view (the node-local registry); called before the command that caused it
   *     is answered
   */
  public AdmissionState(String model, AdmissionSettings settings, Clock clock, KvOverlapSource overlapSource,
      Consumer<SelectionView> publisher) {
    this.model = model;
    this.settings = settings;
    this.clock = clock;
    this.overlapSource = overlapSource;
    this.publisher = publisher;
    this.picker = newPicker(policy);
    republish();
  }

  public AdmissionState(String model, AdmissionSettings settings, Clock clock) {
    this(model, settings, clock, KvOverlapSource.NONE, view -> {});
  }

  public SelectionView view() {
    return view;
  }

  public String model() {
    return model;
  }

  // ---- membership and policy

  public Registered register(WorkerConfig config) {
    config.validate();
    WorkerConfig existing = workers.get(config.workerId());
    if (existing != null) {
      if (existing.equals(config)) {
        return new Registered(false, viewVersion);
      }
      throw new RoutingError(RoutingError.Code.ALREADY_EXISTS, RoutingError.WORKER_CONFIG_CONFLICT,
          "worker '" + config.workerId() + "' is already registered for model '" + model
              + "' with a different config; deregister it first").toException();
    }
    if (!workers.isEmpty() && workers.firstEntry().getValue().blockSize() != config.blockSize()) {
      throw RoutingError.invalid(RoutingError.BLOCK_SIZE_MISMATCH, "model '" + model + "' uses block_size "
          + workers.firstEntry().getValue().blockSize() + ", got " + config.blockSize()).toException();
    }
    workers.put(config.workerId(), config);
    for (int r = config.dpStart(); r < config.dpStart() + config.dpSize(); r++) {
      cells.computeIfAbsent(config.rank(r), rank -> new LoadCell());
    }
    republish();
    dispatch();
    return new Registered(true, viewVersion);
  }

  /** Removes a worker and the live bookings on it; returns how many bookings were dropped. */
  public int deregister(String workerId) {
    WorkerConfig removed = workers.remove(workerId);
    if (removed == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    int dropped = 0;
    activePrefix.removeWorker(workerId);
    overlapSource.removeWorker(workerId);
    for (Iterator<Booking> it = bookings.values().iterator(); it.hasNext(); ) {
      if (it.next().rank.workerId().equals(workerId)) {
        it.remove();
        dropped++;
      }
    }
    cells.keySet().removeIf(rank -> rank.workerId().equals(workerId));
    republish();
    dispatch();
    return dropped;
  }

  public void reportLoad(String workerId, List<RankReport> ranks) {
    WorkerConfig worker = workers.get(workerId);
    if (worker == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    for (RankReport report : ranks) {
      if (report.dpRank() < worker.dpStart() || report.dpRank() >= worker.dpStart() + worker.dpSize()) {
        throw RoutingError.invalid(RoutingError.INVALID_SIZE, "worker '" + workerId + "' has no dp rank "
            + report.dpRank()).toException();
      }
      if (report.decodeBlocks() < 0 || report.prefillTokens() < 0 || report.waitingRequests() < 0) {
        throw RoutingError.invalid(RoutingError.INVALID_SIZE, "reported loads must not be negative").toException();
      }
    }
    long now = clock.millis();
    for (RankReport report : ranks) {
      cells.get(worker.rank(report.dpRank())).report(
          new ReportedLoad(report.decodeBlocks(), report.prefillTokens(), report.waitingRequests(), now));
    }
    dispatch();
  }

  /** Switches policy and/or parameters; bookings, loads and the queue are kept. Returns the new view version. */
  public long setPolicy(String policyName, Map<String, String> parameters) {
    PolicyConfig next = policy.with(policyName, parameters);
    policy = next;
    picker = newPicker(next);
    republish();
    dispatch();
    return viewVersion;
  }

  private static PickerSlot newPicker(PolicyConfig config) {
    long seed = config.seed() != null ? config.seed() : ThreadLocalRandom.current().nextLong();
    return new PickerSlot(config.policy(), new PickerState(seed, 0));
  }

  private void republish() {
    view = new SelectionView(model, ++viewVersion, workers.values(), cells, policy, picker, overlapSource,
        activePrefix, settings.heartbeatTimeout().toMillis());
    publisher.accept(view);
  }

  // ---- selection and booking

  /** The actor's reference advisory pick: same function, same view, same picker lock as the inline path. */
  public SelectionResult selectWithoutAdmission(SelectionRequest request) {
    return Selector.select(view, request, scratch, clock.millis());
  }

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
    Booking live = bookings.get(request.requestId());
    if (live != null) {
      live.nonce = nonce;
      return new BookOutcome.Booked(answer(live, true));
    }
    supersedePending(request.requestId());
    if (view.isEmpty()) {
      return new BookOutcome.Rejected(RoutingError.unknownModel(model));
    }
    if (queueingEnabled() && (!pending.isEmpty() || allCandidatesBusy(request, now))) {
      if (pending.size() >= policy.maxPending()) {
        return new BookOutcome.Rejected(new RoutingError(RoutingError.Code.RESOURCE_EXHAUSTED,
            RoutingError.QUEUE_LIMIT, "queue limit max_pending reached: " + pending.size() + " pending of "
                + policy.maxPending()));
      }
      pending.addLast(new Pending(request.requestId(), nonce, request, deadlineMillis, now));
      return new BookOutcome.Queued(pending.size());
    }
    return selectAndBook(request, nonce, now, 0);
  }

  /** A retry of a request id that is still queued takes its place; the abandoned call is answered as superseded. */
  private void supersedePending(String requestId) {
    for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
      Pending waiting = it.next();
      if (waiting.requestId().equals(requestId)) {
        it.remove();
        completions.add(new Completion(waiting.nonce(), new BookOutcome.Rejected(new RoutingError(
            RoutingError.Code.FAILED_PRECONDITION, "SUPERSEDED", "a newer Book with the same request_id replaced it"))));
      }
    }
  }

  private BookOutcome selectAndBook(SelectionRequest request, long nonce, long now, long queuedMicros) {
    SelectionResult selection;
    try {
      selection = Selector.select(view, request, scratch, now);
    } catch (RoutingException e) {
      return new BookOutcome.Rejected(e.error());
    }
    long prefill = Math.max(request.islTokens() - selection.cachedTokens(), 0);
    long decode = Scorers.requestBlocks(request.islTokens(), view.blockSize());
    RankLoad after = addLoad(selection.rank(), 1, prefill, decode);
    Booking booking = new Booking(request.requestId(), attempts.next(now), selection.rank(), prefill, decode, now,
        queuedMicros, selection.withLoad(after), nonce, now + settings.lease().toMillis(), request.blockHashes());
    bookings.put(booking.requestId, booking);
    activePrefix.add(booking.rank, booking.attempt, booking.sequenceHashes);
    overlapSource.onBooked(booking.rank, booking.sequenceHashes, now);
    return new BookOutcome.Booked(answer(booking, false));
  }

  private static BookingAnswer answer(Booking booking, boolean replay) {
    return new BookingAnswer(booking.selection, booking.requestId, booking.attempt, replay, booking.queuedMicros,
        booking.leaseExpiresAtMillis);
  }

  private RankLoad addLoad(Rank rank, int requests, long prefill, long decode) {
    LoadCell cell = cells.get(rank);
    RankLoad next = cell.booked().plus(++loadSeq, requests, prefill, decode);
    cell.apply(next);
    return next;
  }

  // ---- fenced mutations

  public MutationResult release(String requestId, long attempt) {
    Booking booking = fenced(requestId, attempt);
    if (booking == null) {
      return MutationResult.NOT_APPLIED;
    }
    free(booking);
    dispatch();
    return new MutationResult(true, 0);
  }

  /** Drops the booking's prefill load (blocks stay) and renews its lease; a second call changes nothing. */
  public MutationResult markPrefillDone(String requestId, long attempt) {
    Booking booking = fenced(requestId, attempt);
    if (booking == null || booking.prefillDone) {
      return MutationResult.NOT_APPLIED;
    }
    addLoad(booking.rank, 0, -booking.prefillTokens, 0);
    booking.prefillDone = true;
    booking.leaseExpiresAtMillis = clock.millis() + settings.lease().toMillis();
    dispatch();
    return new MutationResult(true, booking.leaseExpiresAtMillis);
  }

  public MutationResult renew(String requestId, long attempt) {
    Booking booking = fenced(requestId, attempt);
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
    Booking booking = bookings.get(requestId);
    if (booking != null && booking.nonce == nonce) {
      free(booking);
      dispatch();
      return true;
    }
    return pending.removeIf(waiting -> waiting.nonce() == nonce && waiting.requestId().equals(requestId));
  }

  private Booking fenced(String requestId, long attempt) {
    Booking booking = bookings.get(requestId);
    return booking != null && booking.attempt == attempt ? booking : null;
  }

  private void free(Booking booking) {
    bookings.remove(booking.requestId);
    activePrefix.remove(booking.rank, booking.attempt);
    addLoad(booking.rank, -1, -booking.heldPrefillTokens(), -booking.decodeBlocks);
  }

  /** Expires bookings past their lease and queued Books past their deadline; returns the number of bookings expired. */
  public int expire() {
    long now = clock.millis();
    int expired = 0;
    for (Booking booking : new ArrayList<>(bookings.values())) {
      if (booking.leaseExpiresAtMillis <= now) {
        free(booking);
        expired++;
      }
    }
    expiredBookings += expired;
    overlapSource.expire(now);
    dispatch();
    return expired;
  }

  // ---- the queue

  private boolean queueingEnabled() {
    return policy.queueThresholdFrac() != null;
  }

  /** True when every candidate for the request holds more prefill tokens than the queue threshold allows. */
  private boolean allCandidatesBusy(SelectionRequest request, long now) {
    try {
      LoadProjection.projectWorkerLoads(view, request, scratch, now);
    } catch (RoutingException e) {
      return false; // selecting it reports the error
    }
    double frac = policy.queueThresholdFrac();
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
    while (!pending.isEmpty()) {
      Pending head = pending.peekFirst();
      if (head.deadlineMillis() > 0 && now >= head.deadlineMillis()) {
        pending.pollFirst();
        completions.add(new Completion(head.nonce(), new BookOutcome.Rejected(new RoutingError(
            RoutingError.Code.DEADLINE_EXCEEDED, RoutingError.QUEUE_DEADLINE_EXCEEDED,
            "waited " + (now - head.enqueuedAtMillis()) + " ms in the queue past the deadline"))));
        continue;
      }
      if (queueingEnabled() && allCandidatesBusy(head.request(), now)) {
        return;
      }
      pending.pollFirst();
      long queuedMicros = (now - head.enqueuedAtMillis()) * 1000;
      completions.add(new Completion(head.nonce(), selectAndBook(head.request(), head.nonce(), now, queuedMicros)));
    }
  }

  /** Queued Books decided since the last call, to be answered by the caller. */
  public List<Completion> drainCompletions() {
    if (completions.isEmpty()) {
      return List.of();
    }
    List<Completion> drained = new ArrayList<>(completions);
    completions.clear();
    return drained;
  }

  public int pendingCount() {
    return pending.size();
  }

  public int liveBookings() {
    return bookings.size();
  }

  // ---- inspection

  public ModelSnapshot snapshot() {
    long now = clock.millis();
    Map<Rank, Integer> live = new HashMap<>();
    List<ModelSnapshot.BookingSnapshot> bookingList = new ArrayList<>();
    for (Booking b : bookings.values()) {
      live.merge(b.rank, 1, Integer::sum);
      bookingList.add(new ModelSnapshot.BookingSnapshot(b.requestId, b.attempt, b.rank.workerId(), b.rank.dpRank(),
          b.heldPrefillTokens(), b.decodeBlocks, b.prefillDone, b.bookedAtMillis, b.leaseExpiresAtMillis));
    }
    List<ModelSnapshot.WorkerSnapshot> workerList = new ArrayList<>();
    for (WorkerConfig worker : workers.values()) {
      List<ModelSnapshot.RankSnapshot> ranks = new ArrayList<>();
      boolean available = false;
      for (int r = worker.dpStart(); r < worker.dpStart() + worker.dpSize(); r++) {
        Rank rank = worker.rank(r);
        LoadCell cell = cells.get(rank);
        ReportedLoad reported = cell.reported();
        available |= LoadProjection.isAvailable(reported, settings.heartbeatTimeout().toMillis(), now);
        ranks.add(new ModelSnapshot.RankSnapshot(r, cell.booked(), live.getOrDefault(rank, 0),
            LoadProjection.isOverloaded(policy, worker, cell.booked(), reported), reported));
      }
      workerList.add(new ModelSnapshot.WorkerSnapshot(worker, available, ranks));
    }
    return new ModelSnapshot(model, policy.policy().wireName(), policy.toParameters(), viewVersion,
        view.blockSize(), workerList, bookingList, pending.size(), expiredBookings);
  }

  /** Checks the ledger against the load cells; returns a description of the first mismatch, or null. */
  public String checkInvariants() {
    Map<Rank, long[]> expected = new HashMap<>();
    for (Booking b : bookings.values()) {
      long[] sums = expected.computeIfAbsent(b.rank, rank -> new long[3]);
      sums[0]++;
      sums[1] += b.heldPrefillTokens();
      sums[2] += b.decodeBlocks;
    }
    for (Map.Entry<Rank, LoadCell> entry : cells.entrySet()) {
      long[] sums = expected.getOrDefault(entry.getKey(), new long[3]);
      RankLoad load = entry.getValue().booked();
      if (load.inFlight() != sums[0] || load.prefillTokens() != sums[1] || load.decodeBlocks() != sums[2]) {
        return "rank " + entry.getKey() + " cell " + load + " but ledger holds in_flight=" + sums[0]
            + " prefill=" + sums[1] + " decode=" + sums[2];
      }
    }
    return null;
  }
}
