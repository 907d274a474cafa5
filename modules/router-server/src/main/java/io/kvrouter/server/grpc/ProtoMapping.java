package io.kvrouter.server.grpc;

import io.kvrouter.api.v1.BookingState;
import io.kvrouter.api.v1.KvEvent;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.QueueClassState;
import io.kvrouter.api.v1.QueueState;
import io.kvrouter.api.v1.WaitingBook;
import io.kvrouter.core.admission.QueueSnapshot;
import io.kvrouter.api.v1.ReplicaStaleness;
import io.kvrouter.api.v1.RankState;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.WorkerEndpoint;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkerState;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.cluster.admission.ModelStateReport;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.replication.Staleness;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.Disaggregation;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionRequests;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.cluster.regions.Regions;
import io.kvrouter.core.regions.PoolSummary;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** Proto ↔ domain mapping, with the request-shape validation that belongs at the edge. */
public final class ProtoMapping {
  private final RequestLimits limits;
  private final SelectionRequests requests;

  public ProtoMapping(RequestLimits limits) {
    this.limits = limits;
    this.requests = new SelectionRequests(limits);
  }

  /**
   * A validated domain request, through router-core's {@link SelectionRequests} (the one mapping every transport
   * shares): the prompt is reduced to the sequence hashes of its full blocks with the model's block size from
   * {@code view} (null: the model is unknown and the selection will say so).
   */
  public SelectionRequest toSelectionRequest(RouteRequest in, boolean forBook, SelectionView view) {
    return toSelectionRequest(in, forBook, view == null ? 0 : view.blockSize());
  }

  /** As above, with the model's block size in the pool it goes to (0: unknown; no sequence hashes then). */
  public SelectionRequest toSelectionRequest(RouteRequest in, boolean forBook, int blockSize) {
    if (in.getScope() == Scope.UNRECOGNIZED) {
      throw unknownEnumValue("scope", in.getScopeValue());
    }
    if (in.getDisaggregation() == io.kvrouter.api.v1.Disaggregation.UNRECOGNIZED) {
      throw unknownEnumValue("disaggregation", in.getDisaggregationValue());
    }
    int tokenCount = in.getTokenIdsCount();
    int[] tokens = null;
    if (tokenCount > 0 && tokenCount <= requests.limits().maxTokens()) {
      tokens = TOKENS.get();
      if (tokens.length < tokenCount) {
        tokens = new int[Math.max(tokenCount, tokens.length * 2)];
        TOKENS.set(tokens);
      }
      for (int i = 0; i < tokenCount; i++) {
        tokens[i] = in.getTokenIds(i);
      }
    }
    int hashCount = in.getBlockHashesCount();
    long[] hashes = null;
    if (hashCount > 0) {
      hashes = new long[hashCount];
      for (int i = 0; i < hashCount; i++) {
        hashes[i] = in.getBlockHashes(i);
      }
    }
    SelectionRequest request = requests.toSelectionRequest(new SelectionRequests.Fields(in.getModel(), in.getRequestId(), tokens,
        tokenCount, hashes, hashCount, in.getIslTokens(), in.getExpectedOutputTokens(), in.getLoraName(),
        in.getCacheSalt(), in.getPinnedWorker(), in.hasPinnedDpRank() ? in.getPinnedDpRank() : null,
        in.getAllowedWorkersList(), in.getExcludedWorkersList(), in.getPriority(),
        in.getOverrides().hasTemperature() ? in.getOverrides().getTemperature() : null,
        in.getOverrides().hasOverlapCredit() ? in.getOverrides().getOverlapCredit() : null,
        in.getOverrides().hasPrefillLoadScale() ? in.getOverrides().getPrefillLoadScale() : null,
        in.getStrictPriority(), in.getPolicyClass(), toDisaggregation(in.getDisaggregation())), forBook, blockSize);
    if (in.getSessionMode() == io.kvrouter.api.v1.SessionMode.UNRECOGNIZED) {
      throw unknownEnumValue("session_mode", in.getSessionModeValue());
    }
    request = SelectionRequests.withSession(request, in.getSessionId(), toMode(in.getSessionMode()));
    request = SelectionRequests.withPlacement(request, in.getRequiredTaintsList(), in.getPreferredTaintsList(),
        in.hasPreferredTaintMultiplier() ? in.getPreferredTaintMultiplier() : null);
    // uint32: a number above 2^31 is the highest retry
    return forBook && in.getRetry() != 0 ? request.withRetry(in.getRetry() < 0 ? Integer.MAX_VALUE : in.getRetry())
        : request;
  }

  static io.kvrouter.core.model.SessionMode toMode(io.kvrouter.api.v1.SessionMode mode) {
    return switch (mode) {
      case SESSION_MODE_SOFT -> io.kvrouter.core.model.SessionMode.SOFT;
      case SESSION_MODE_HARD -> io.kvrouter.core.model.SessionMode.HARD;
      default -> io.kvrouter.core.model.SessionMode.DEFAULT;
    };
  }

  static io.kvrouter.api.v1.SessionMode toProto(io.kvrouter.core.model.SessionMode mode) {
    return switch (mode) {
      case SOFT -> io.kvrouter.api.v1.SessionMode.SESSION_MODE_SOFT;
      case HARD -> io.kvrouter.api.v1.SessionMode.SESSION_MODE_HARD;
      case DEFAULT -> io.kvrouter.api.v1.SessionMode.SESSION_MODE_UNSPECIFIED;
    };
  }

  private static final ThreadLocal<int[]> TOKENS = ThreadLocal.withInitial(() -> new int[4096]);

  public static Selection toProto(SelectionResult result) {
    return toProto(result, "");
  }

  /** The selection, naming where callers reach the routers of the worker's region (global calls). */
  public static Selection toProto(SelectionResult result, String routerEndpoint) {
    return toProto(result, routerEndpoint, "");
  }

  /**
   * The selection, naming where callers reach the routers of the worker's region (global calls) and the node that
   * owns the model's admission actor there ({@code ownerEndpoint}, empty when unknown).
   */
  public static Selection toProto(SelectionResult result, String routerEndpoint, String ownerEndpoint) {
    Selection.Builder out = Selection.newBuilder();
    SelectionResult decode = result.decode();
    if (decode != null) {
      out.setDecode(io.kvrouter.api.v1.DecodeSelection.newBuilder()
          .setWorker(WorkerEndpoint.newBuilder()
              .setWorkerId(decode.rank().workerId())
              .setDpRank(decode.rank().dpRank())
              .setEndpoint(decode.endpoint())
              .setRegion(decode.region()))
          .setOverlapBlocks(decode.overlapBlocks())
          .setCachedTokens(decode.cachedTokens())
          .setCost(decode.cost())
          .setLoad(toProto(decode.load())));
    }
    return out
        .setWorker(WorkerEndpoint.newBuilder()
            .setWorkerId(result.rank().workerId())
            .setDpRank(result.rank().dpRank())
            .setEndpoint(result.endpoint())
            .setRegion(result.region()))
        .setOverlapBlocks(result.overlapBlocks())
        .setCachedTokens(result.cachedTokens())
        .setCost(result.cost())
        .setLoad(toProto(result.load()))
        .setViewVersion(result.viewVersion())
        .setPolicy(result.policy())
        .setRegion(result.region())
        .setRouterEndpoint(routerEndpoint)
        .setOwnerEndpoint(ownerEndpoint)
        .build();
  }

  public static io.kvrouter.api.v1.Booking toProto(BookingAnswer answer) {
    return toProto(answer, "");
  }

  public static io.kvrouter.api.v1.Booking toProto(BookingAnswer answer, String routerEndpoint) {
    return toProto(answer, routerEndpoint, "");
  }

  /** The booking, its selection naming the region's router endpoint (global calls) and the owner's endpoint. */
  public static io.kvrouter.api.v1.Booking toProto(BookingAnswer answer, String routerEndpoint,
      String ownerEndpoint) {
    io.kvrouter.api.v1.Booking.Builder out = io.kvrouter.api.v1.Booking.newBuilder()
        .setSelection(toProto(answer.selection(), routerEndpoint, ownerEndpoint))
        .setRegion(answer.selection().region())
        .setRequestId(answer.requestId())
        .setAttempt(answer.attempt())
        .setReplay(answer.replay())
        .setQueuedMicros(answer.queuedMicros())
        .setLeaseExpiresUnixMs(answer.leaseExpiresAtMillis())
        .setPolicyClass(answer.policyClass());
    if (answer.session() != null) {
      // set only when the Book named a session (and affinity is on): a default message would read as present
      out.setSession(toProto(answer.session()));
    }
    return out.build();
  }

  static io.kvrouter.api.v1.SessionOutcome toProto(io.kvrouter.core.admission.SessionOutcome session) {
    io.kvrouter.api.v1.SessionOutcome.Builder out = io.kvrouter.api.v1.SessionOutcome.newBuilder()
        .setSessionId(session.sessionId())
        .setMode(toProto(session.mode()))
        .setOutcome(session.kind().name().toLowerCase(java.util.Locale.ROOT));
    if (session.previous() != null) {
      out.setPreviousWorkerId(session.previous().workerId()).setPreviousDpRank(session.previous().dpRank());
    }
    return out.build();
  }

  public static io.kvrouter.api.v1.RankLoad toProto(RankLoad load) {
    return io.kvrouter.api.v1.RankLoad.newBuilder()
        .setInFlight(load.inFlight())
        .setPrefillTokens(load.prefillTokens())
        .setDecodeBlocks(load.decodeBlocks())
        .build();
  }

  /**
   * A validated worker configuration; a worker registered without a region belongs to {@code defaultRegion} (the
   * registering node's).
   */
  public WorkerConfig toWorkerConfig(WorkerRegistration in, String defaultRegion) {
    RequestLimits.requireModel(in.getModel());
    if (in.getRole() == io.kvrouter.api.v1.WorkerRole.UNRECOGNIZED) {
      throw unknownEnumValue("role", in.getRoleValue());
    }
    String region = in.getRegion().isEmpty() ? defaultRegion : in.getRegion();
    // the count is checked before the names are copied into the config's set
    if (in.getLoraAdaptersCount() > RequestLimits.MAX_LORA_ADAPTERS) {
      throw RoutingError.invalid(RoutingError.TOO_MANY_ITEMS, "lora_adapters has " + in.getLoraAdaptersCount()
          + " entries; at most " + RequestLimits.MAX_LORA_ADAPTERS).toException();
    }
    for (String adapter : in.getLoraAdaptersList()) {
      if (adapter.isEmpty()) {
        throw RoutingError.invalid(RoutingError.MALFORMED, "a lora_adapters entry is empty").toException();
      }
    }
    WorkerConfig config = new WorkerConfig(in.getWorkerId(), in.getDpStart(), in.getDpSize(),
        in.getMaxNumBatchedTokens(), in.getTotalKvBlocks(), in.getBlockSize(), in.getEndpoint(), region,
        toRole(in.getRole()), io.kvrouter.core.model.Taints.parse("taints", in.getTaintsList()),
        new java.util.TreeSet<>(in.getLoraAdaptersList()));
    limits.validate(config);
    return config;
  }

  /** A batch of KV events, checked against the batch limits before any of it is converted. */
  public void validate(KvEventBatch in) {
    long blocks = 0;
    for (KvEvent event : in.getEventsList()) {
      switch (event.getDataCase()) {
        case STORED -> {
          blocks += event.getStored().getBlocksCount();
          requireTier(event.getStored().getStorageTier(), event.getStored().getStorageTierValue());
        }
        case REMOVED -> {
          blocks += event.getRemoved().getBlockHashesCount();
          requireTier(event.getRemoved().getStorageTier(), event.getRemoved().getStorageTierValue());
        }
        default -> { }
      }
    }
    limits.validateKvBatch(in.getModel(), in.getWorkerId(), in.getDpRank(), in.getEventsCount(), blocks);
  }

  public void validate(LoadReport in) {
    limits.validateLoadReport(in.getModel(), in.getWorkerId(), in.getRanksCount());
  }

  public void validate(SetPolicyRequest in) {
    limits.validatePolicy(in.getModel(), in.getPolicy(), in.getParametersMap());
  }

  private static void requireTier(io.kvrouter.api.v1.StorageTier tier, int value) {
    if (tier == io.kvrouter.api.v1.StorageTier.UNRECOGNIZED) {
      throw unknownEnumValue("storage_tier", value);
    }
  }

  /** INVALID_ARGUMENT UNKNOWN_ENUM_VALUE: proto3 keeps values the contract does not define; the router does not. */
  private static RuntimeException unknownEnumValue(String field, int value) {
    return RoutingError.invalid(RoutingError.UNKNOWN_ENUM_VALUE, field + " " + value
        + " is not a value the contract defines").toException();
  }

  public static WorkerRegistration toProto(String model, WorkerConfig config) {
    return WorkerRegistration.newBuilder()
        .setModel(model)
        .setWorkerId(config.workerId())
        .setDpStart(config.dpStart())
        .setDpSize(config.dpSize())
        .setMaxNumBatchedTokens(config.maxNumBatchedTokens())
        .setTotalKvBlocks(config.totalKvBlocks())
        .setBlockSize(config.blockSize())
        .setEndpoint(config.endpoint())
        .setRegion(config.region())
        .setRole(toProto(config.role()))
        .addAllTaints(config.taints())
        .addAllLoraAdapters(config.loraAdapters())
        .build();
  }

  private static Disaggregation toDisaggregation(io.kvrouter.api.v1.Disaggregation mode) {
    return switch (mode) {
      case DISAGGREGATION_AGGREGATED -> Disaggregation.AGGREGATED;
      case DISAGGREGATION_DISAGGREGATED -> Disaggregation.DISAGGREGATED;
      case DISAGGREGATION_AUTO -> Disaggregation.AUTO;
      case UNRECOGNIZED -> throw new IllegalStateException("checked by toSelectionRequest");
    };
  }

  private static WorkerRole toRole(io.kvrouter.api.v1.WorkerRole role) {
    return switch (role) {
      case WORKER_ROLE_PREFILL -> WorkerRole.PREFILL;
      case WORKER_ROLE_DECODE -> WorkerRole.DECODE;
      case WORKER_ROLE_UNSPECIFIED, WORKER_ROLE_AGGREGATED -> WorkerRole.AGGREGATED;
      case UNRECOGNIZED -> throw new IllegalStateException("checked by toWorkerConfig");
    };
  }

  private static io.kvrouter.api.v1.WorkerRole toProto(WorkerRole role) {
    return switch (role) {
      case AGGREGATED -> io.kvrouter.api.v1.WorkerRole.WORKER_ROLE_AGGREGATED;
      case PREFILL -> io.kvrouter.api.v1.WorkerRole.WORKER_ROLE_PREFILL;
      case DECODE -> io.kvrouter.api.v1.WorkerRole.WORKER_ROLE_DECODE;
    };
  }

  /** A model's state as this node reports it: the actor's snapshot, where it runs and this node's staleness. */
  public static ModelState toProto(ModelStateReport report) {
    ModelState.Builder out = toProto(report.snapshot()).toBuilder()
        .setHostNode(report.hostNode())
        .setRegion(report.region());
    Staleness staleness = report.staleness();
    if (staleness != null) {
      out.setStaleness(ReplicaStaleness.newBuilder()
          .setEpoch(staleness.epoch())
          .setViewVersion(staleness.viewVersion())
          .setReplicationSeq(staleness.seq())
          .setReplicationSeqLag(staleness.seqLag())
          .setViewAgeMs(staleness.ageMillis())
          .setAwaitingSnapshot(staleness.awaitingSnapshot()));
    }
    return out.build();
  }

  /** A pool as this node last heard of it, {@code nowMillis} on this node's clock. */
  public static io.kvrouter.api.v1.PoolSummary toProto(PoolSummary pool, Regions regions, long nowMillis) {
    return io.kvrouter.api.v1.PoolSummary.newBuilder()
        .setRegion(pool.region())
        .setWorkers(pool.workers())
        .setRanks(pool.ranks())
        .setInFlight(pool.inFlight())
        .setPending(pool.pending())
        .setCapacity(pool.capacity())
        .setLoad(pool.load())
        .setAgeMs(pool.ageMillis(nowMillis))
        .setStale(pool.isStale(nowMillis, regions.pools().staleAfterMillis()))
        .addAllRouterEndpoints(regions.routerEndpoints(pool.region(), pool))
        .setEpoch(pool.epoch())
        .setSequence(pool.sequence())
        .build();
  }

  /** The pools of {@code model} this node heard of, by region name. */
  public static List<io.kvrouter.api.v1.PoolSummary> pools(Regions regions, String model) {
    long now = regions.pools().nowMillis();
    List<PoolSummary> pools = new ArrayList<>(regions.pools().pools(model));
    pools.sort(Comparator.comparing(PoolSummary::region));
    List<io.kvrouter.api.v1.PoolSummary> out = new ArrayList<>(pools.size());
    pools.forEach(pool -> out.add(toProto(pool, regions, now)));
    return out;
  }

  public static ModelState toProto(ModelSnapshot snapshot) {
    ModelState.Builder out = ModelState.newBuilder()
        .setModel(snapshot.model())
        .setPolicy(snapshot.policy())
        .putAllPolicyParameters(snapshot.policyParameters())
        .setViewVersion(snapshot.viewVersion())
        .setBlockSize(snapshot.blockSize())
        .setPending(snapshot.pending())
        .setExpiredBookings(snapshot.expiredBookings())
        .setEpoch(snapshot.epoch())
        .setRecovering(snapshot.recovering());
    for (ModelSnapshot.WorkerSnapshot worker : snapshot.workers()) {
      WorkerState.Builder w = WorkerState.newBuilder()
          .setConfig(toProto(snapshot.model(), worker.config()))
          .setAvailable(worker.available());
      for (ModelSnapshot.RankSnapshot rank : worker.ranks()) {
        RankState.Builder r = RankState.newBuilder()
            .setDpRank(rank.dpRank())
            .setLoad(toProto(rank.load()))
            .setLiveBookings(rank.liveBookings())
            .setOverloaded(rank.overloaded());
        ReportedLoad reported = rank.reported();
        if (reported != null) {
          r.setReported(io.kvrouter.api.v1.RankLoadReport.newBuilder()
              .setDpRank(rank.dpRank())
              .setActiveDecodeBlocks(reported.decodeBlocks())
              .setActivePrefillTokens(reported.prefillTokens())
              .setWaitingRequests(reported.waitingRequests())
              .addAllLoraAdapters(reported.loraAdapters()));
        }
        w.addRanks(r);
      }
      out.addWorkers(w);
    }
    for (ModelSnapshot.BookingSnapshot b : snapshot.bookings()) {
      out.addBookings(BookingState.newBuilder()
          .setRequestId(b.requestId())
          .setAttempt(b.attempt())
          .setWorkerId(b.workerId())
          .setDpRank(b.dpRank())
          .setPrefillTokens(b.prefillTokens())
          .setDecodeBlocks(b.decodeBlocks())
          .setPrefillDone(b.prefillDone())
          .setBookedUnixMs(b.bookedAtMillis())
          .setLeaseExpiresUnixMs(b.leaseExpiresAtMillis())
          .setDecodeWorkerId(b.decodeRank() == null ? "" : b.decodeRank().workerId())
          .setDecodeDpRank(b.decodeRank() == null ? 0 : b.decodeRank().dpRank()));
    }
    out.setQueue(toProto(snapshot.queue()));
    ModelSnapshot.SessionsSnapshot sessions = snapshot.sessions();
    io.kvrouter.api.v1.SessionsState.Builder s = io.kvrouter.api.v1.SessionsState.newBuilder()
        .setBindings(sessions.bindings())
        .setMaxBindings(sessions.maxBindings())
        .setBound(sessions.counters().bound())
        .setRebound(sessions.counters().rebound())
        .setExpired(sessions.counters().expired())
        .setEvicted(sessions.counters().evicted())
        .setInvalidated(sessions.counters().invalidated());
    for (io.kvrouter.core.replication.SessionBinding binding : sessions.recent()) {
      s.addRecent(io.kvrouter.api.v1.SessionBindingState.newBuilder()
          .setSessionId(binding.sessionId())
          .setWorkerId(binding.rank().workerId())
          .setDpRank(binding.rank().dpRank())
          .setBoundUnixMs(binding.boundAtMillis())
          .setLastUsedUnixMs(binding.lastUsedMillis())
          .setExpiresUnixMs(binding.expiresAtMillis()));
    }
    out.setSessions(s);
    return out.build();
  }

  public static QueueState toProto(QueueSnapshot queue) {
    QueueState.Builder out = QueueState.newBuilder()
        .setEnabled(queue.enabled())
        .setPending(queue.pending())
        .setMaxPending(queue.maxPending())
        .setAgingMs(queue.agingMillis());
    for (QueueSnapshot.ClassSnapshot c : queue.classes()) {
      out.addClasses(QueueClassState.newBuilder()
          .setName(c.name())
          .setFamily(c.family())
          .setBucket(c.bucket())
          .setQueuePolicy(c.queuePolicy())
          .setQueueing(c.queueing())
          .setQuantum(c.quantum())
          .setDeficit(c.deficit())
          .setDepth(c.depth())
          .setRawIslTokens(c.rawIslTokens())
          .setCachedTokens(c.cachedTokens())
          .setRequestsLimit(c.requestsLimit())
          .setRawIslTokensLimit(c.rawIslTokensLimit())
          .setCachedTokensLimit(c.cachedTokensLimit())
          .setOldestWaitMs(c.oldestWaitMillis())
          .setEnqueued(c.enqueued())
          .setDispatched(c.dispatched())
          .setWaitedMicrosTotal(c.waitedMicrosTotal())
          .putAllRejections(c.rejections()));
    }
    for (QueueSnapshot.WaitingSnapshot w : queue.waiting()) {
      out.addWaiting(WaitingBook.newBuilder()
          .setRequestId(w.requestId())
          .setPolicyClass(w.policyClass())
          .setStrictPriority(w.strictPriority())
          .setPriority(w.priority())
          .setAged(w.aged())
          .setRawIslTokens(w.rawIslTokens())
          .setUncachedTokens(w.uncachedTokens())
          .setReason(w.reason())
          .setWaitedMs(w.waitedMillis())
          .setDeadlineInMs(w.deadlineInMillis()));
    }
    return out.build();
  }
}
