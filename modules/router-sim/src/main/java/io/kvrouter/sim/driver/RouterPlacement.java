package io.kvrouter.sim.driver;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.KvCleared;
import io.kvrouter.api.v1.KvEvent;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.KvRemoved;
import io.kvrouter.api.v1.KvStored;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.StoredBlock;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.sim.engine.KvCacheEvent;
import io.kvrouter.sim.engine.SimEngine;
import io.kvrouter.sim.engine.SimRequest;
import io.kvrouter.sim.workload.WorkloadRequest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.Map;

/**
 * Placement by the real router over gRPC, as an engine fleet and a frontend would use it: engines register, publish
 * their KV events (unless {@code publishEvents} is off, which leaves the router's index approximate) and report
 * load; each request is booked (Book with its prompt tokens), marked when its prefill is done, and released when it
 * finishes. Each run uses a model of its own, deregistered at the end.
 *
 * <p>An engine publishes after every step; this placement keeps each rank's events and sends them, cut into batches
 * within the router's limits ({@link KvBatches}), just before the next Book and the next load report. The router's index is thus exactly as fresh at every
 * decision as with one call per step, for a fraction of the calls.
 *
 * <p>Calls other than Book (events, MarkPrefillDone, Release, load reports) are sent without waiting, and every one
 * of them is answered before the next Book is sent: what they change commutes (different bookings, different ranks,
 * one event batch per rank in flight at a time), so each Book sees the same router state as if every call had been
 * awaited in turn, and a run stays deterministic at a fraction of the round trips.
 *
 * <p>With the router's admission queue on, a Book may not be answered at once. Each Book is then sent and this
 * placement waits until the router is quiescent: every Book not answered yet is one the router holds in its queue
 * (their count equals the model's pending count in GetModelState). Such a request is {@link Placement#QUEUED}; after
 * every later event (once the calls it caused are answered, and the router is quiescent again) {@link #settle}
 * hands the simulation the queued requests the router booked (or refused) meanwhile, in the order it booked them, so
 * each enters its engine at the simulated time its capacity was freed.
 */
public final class RouterPlacement implements Placement {
  private final RouterClients clients;
  private final String label;
  private final String model;
  private final String policy;
  private final Map<String, String> parameters;
  private final boolean publishEvents;
  private final Tagging tagging;
  /** Books sent and not yet handed to the simulation (answered or queued), by request id, in the order sent. */
  private final Map<String, CompletableFuture<Booking>> unsettled = new LinkedHashMap<>();
  private Fleet fleet;
  private final Map<Integer, List<KvCacheEvent>> unsent = new TreeMap<>();
  private final List<CompletionStage<?>> outstanding = new ArrayList<>();
  private final List<CompletionStage<?>> batchesInFlight = new ArrayList<>();
  private long rejected;

  /**
   * Which workload tags a Book carries: its tenant as {@code policy_class}, its tier as {@code strict_priority}, its
   * conversation as {@code session_id} (session affinity, in the model's {@code session_mode}).
   */
  public record Tagging(boolean policyClass, boolean strictPriority, boolean session) {
    public static final Tagging NONE = new Tagging(false, false, false);
    public static final Tagging SESSIONS = new Tagging(false, false, true);

    public Tagging(boolean policyClass, boolean strictPriority) {
      this(policyClass, strictPriority, false);
    }
  }

  public RouterPlacement(RouterClients clients, String label, String model, String policy,
      Map<String, String> parameters, boolean publishEvents) {
    this(clients, label, model, policy, parameters, publishEvents, Tagging.NONE);
  }

  public RouterPlacement(RouterClients clients, String label, String model, String policy,
      Map<String, String> parameters, boolean publishEvents, Tagging tagging) {
    this.clients = clients;
    this.label = label;
    this.model = model;
    this.policy = policy;
    this.parameters = parameters;
    this.publishEvents = publishEvents;
    this.tagging = tagging;
  }

  @Override
  public String label() {
    return label;
  }

  @Override
  public void open(Fleet fleet) {
    this.fleet = fleet;
    FleetConfig config = fleet.config();
    for (SimEngine engine : fleet.engines()) {
      RouterClients.await(clients.workers.register(WorkerRegistration.newBuilder()
          .setModel(model)
          .setWorkerId(engine.workerId())
          .setDpStart(0)
          .setDpSize(engine.ranks().size())
          .setMaxNumBatchedTokens(config.limits().maxBatchedTokens())
          .setTotalKvBlocks(config.kvBlocksPerRank())
          .setBlockSize(config.blockSize())
          .setEndpoint("sim://" + engine.workerId())
          .build()));
    }
    RouterClients.await(clients.admin.setPolicy(SetPolicyRequest.newBuilder()
        .setModel(model).setPolicy(policy).putAllParameters(parameters).build()));
  }

  @Override
  public Placed place(SimRequest request) {
    return place(request, null);
  }

  @Override
  public Placed place(SimRequest request, WorkloadRequest source) {
    flushKvEvents();
    awaitOutstanding();
    RouteRequest.Builder route = RouteRequest.newBuilder()
        .setModel(model)
        .setRequestId(request.id())
        .setExpectedOutputTokens(request.outputTokens());
    if (source != null && tagging.policyClass()) {
      route.setPolicyClass(source.policyClass());
    }
    if (source != null && tagging.strictPriority()) {
      route.setStrictPriority(source.strictPriority());
    }
    if (source != null && tagging.session() && source.session() != null) {
      route.setSessionId(source.session());
    }
    for (int i = 0; i < request.promptTokens(); i++) {
      route.addTokenIds(request.tokens()[i]);
    }
    CompletableFuture<Booking> call = clients.patientRouter.book(route.build()).toCompletableFuture();
    unsettled.put(request.id(), call);
    quiesce();
    if (!call.isDone()) {
      return QUEUED;
    }
    unsettled.remove(request.id());
    return placed(call);
  }

  /** Where an answered Book went; null when the router refused it. */
  private Placed placed(CompletableFuture<Booking> call) {
    try {
      Booking booking = RouterClients.await(call);
      var worker = booking.getSelection().getWorker();
      return new Placed(fleet.unit(worker.getWorkerId(), worker.getDpRank()).index(), booking.getAttempt());
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.UNAVAILABLE
          || e.getStatus().getCode() == Status.Code.RESOURCE_EXHAUSTED
          || e.getStatus().getCode() == Status.Code.INVALID_ARGUMENT
          || e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED) {
        rejected++;
        return null;
      }
      throw e;
    }
  }

  @Override
  public List<Late> settle() {
    if (unsettled.isEmpty()) {
      return List.of();
    }
    flushKvEvents();
    awaitOutstanding(); // what the last event sent (prefill done, releases, reports) is answered: it freed capacity
    quiesce();
    List<Map.Entry<String, CompletableFuture<Booking>>> decided = new ArrayList<>();
    for (Map.Entry<String, CompletableFuture<Booking>> entry : unsettled.entrySet()) {
      if (entry.getValue().isDone()) {
        decided.add(entry);
      }
    }
    // the order the router booked them in (attempts rise within a model); refusals first
    decided.sort(java.util.Comparator.comparingLong(e -> e.getValue().isCompletedExceptionally() ? -1
        : e.getValue().join().getAttempt()));
    List<Late> late = new ArrayList<>(decided.size());
    for (Map.Entry<String, CompletableFuture<Booking>> entry : decided) {
      unsettled.remove(entry.getKey());
      late.add(new Late(entry.getKey(), placed(entry.getValue())));
    }
    return late;
  }

  /**
   * Waits until every Book not answered yet is one the router holds in its queue: their count equals the model's
   * pending count (answers on their way, or Books not yet read, make them differ until they arrive).
   */
  private void quiesce() {
    for (int round = 0; ; round++) {
      List<CompletableFuture<Booking>> open = unsettled.values().stream().filter(f -> !f.isDone()).toList();
      if (open.isEmpty()) {
        return;
      }
      if (round == 0) {
        waitForAny(open, 2); // most Books are answered at once
        continue;
      }
      int pending = RouterClients.await(clients.admin.getModelState(
          ModelStateRequest.newBuilder().setModel(model).build())).getPending();
      if (pending == open.size()) {
        return;
      }
      if (pending > open.size()) {
        throw new IllegalStateException("the router holds " + pending + " queued Books of " + model + ", this "
            + "placement sent only " + open.size() + " unanswered ones");
      }
      if (round > 100_000) {
        throw new IllegalStateException("the router did not settle: " + open.size() + " unanswered, " + pending
            + " queued");
      }
      waitForAny(open, 20);
    }
  }

  private static void waitForAny(List<CompletableFuture<Booking>> calls, long millis) {
    try {
      CompletableFuture.anyOf(calls.toArray(CompletableFuture[]::new)).get(millis, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      // none yet
    } catch (java.util.concurrent.ExecutionException e) {
      // one failed: it is answered
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  @Override
  public void prefillDone(SimRequest request, Placed placed) {
    freeing(clients.router.markPrefillDone(ref(request, placed)));
  }

  @Override
  public void finished(SimRequest request, Placed placed) {
    freeing(clients.router.release(ref(request, placed)));
  }

  /**
   * A call that frees capacity. While the router's queue holds Books such calls no longer commute (each lets queued
   * Books go, onto the ranks free at that moment, picked with the KV index as it stands), so each is sent after the
   * KV events before it are applied and answered before the next call: a run stays a function of its seed.
   */
  private void freeing(CompletionStage<?> call) {
    if (unsettled.isEmpty()) {
      outstanding.add(call);
      return;
    }
    RouterClients.await(call);
  }

  private BookingRef ref(SimRequest request, Placed placed) {
    return BookingRef.newBuilder().setModel(model).setRequestId(request.id()).setAttempt(placed.attempt()).build();
  }

  @Override
  public void kvEvents(Fleet.Unit unit, List<KvCacheEvent> events) {
    if (publishEvents && !events.isEmpty()) {
      unsent.computeIfAbsent(unit.index(), i -> new ArrayList<>()).addAll(events);
      if (!unsettled.isEmpty()) {
        // queued Books may leave at the next freeing call: the index they are picked with is the engines' of now
        flushKvEvents();
        awaitAll(batchesInFlight);
      }
    }
  }

  private void flushKvEvents() {
    awaitAll(batchesInFlight);
    for (Map.Entry<Integer, List<KvCacheEvent>> entry : unsent.entrySet()) {
      for (List<KvCacheEvent> batch : KvBatches.split(entry.getValue())) {
        publish(fleet.unit(entry.getKey()), batch);
      }
    }
    unsent.clear();
  }

  private void publish(Fleet.Unit unit, List<KvCacheEvent> events) {
    KvEventBatch.Builder batch = KvEventBatch.newBuilder()
        .setModel(model).setWorkerId(unit.engine().workerId()).setDpRank(unit.dpRank());
    for (KvCacheEvent event : events) {
      KvEvent.Builder proto = KvEvent.newBuilder().setEventId(event.eventId());
      if (event instanceof KvCacheEvent.Stored stored) {
        KvStored.Builder s = KvStored.newBuilder();
        if (stored.parentBlockId() != null) {
          s.setParentBlockHash(stored.parentBlockId());
        }
        for (int i = 0; i < stored.blockIds().length; i++) {
          s.addBlocks(StoredBlock.newBuilder()
              .setBlockHash(stored.blockIds()[i]).setTokensHash(stored.tokensHashes()[i]));
        }
        proto.setStored(s);
      } else if (event instanceof KvCacheEvent.Removed removed) {
        KvRemoved.Builder r = KvRemoved.newBuilder();
        for (long id : removed.blockIds()) {
          r.addBlockHashes(id);
        }
        proto.setRemoved(r);
      } else if (event instanceof KvCacheEvent.Cleared) {
        proto.setCleared(KvCleared.getDefaultInstance());
      }
      batch.addEvents(proto);
    }
    batchesInFlight.add(clients.workers.publishKvEvents(batch.build()).thenApply(ack -> {
      if (ack.getGaps() > 0) {
        throw new IllegalStateException("the router saw an event-id gap from " + unit.engine().workerId() + "/"
            + unit.dpRank() + ": the simulated engine numbers its events without gaps");
      }
      return ack;
    }));
  }

  @Override
  public void reportLoads(Fleet fleet) {
    flushKvEvents();
    for (SimEngine engine : fleet.engines()) {
      LoadReport.Builder report = LoadReport.newBuilder().setModel(model).setWorkerId(engine.workerId());
      for (int r = 0; r < engine.ranks().size(); r++) {
        var rank = engine.ranks().get(r);
        report.addRanks(RankLoadReport.newBuilder()
            .setDpRank(r)
            .setActiveDecodeBlocks(rank.cache().activeBlocks())
            .setActivePrefillTokens(rank.pendingPrefillTokens())
            .setWaitingRequests(rank.waitingCount()));
      }
      CompletionStage<?> call = clients.workers.reportLoad(report.build());
      if (unsettled.isEmpty()) {
        outstanding.add(call);
      } else {
        RouterClients.await(call); // a report may let queued Books go (an available rank): one at a time
      }
    }
  }

  private void awaitOutstanding() {
    awaitAll(batchesInFlight);
    awaitAll(outstanding);
  }

  private static void awaitAll(List<CompletionStage<?>> calls) {
    for (CompletionStage<?> call : calls) {
      RouterClients.await(call);
    }
    calls.clear();
  }

  public long rejected() {
    return rejected;
  }

  @Override
  public void close() {
    if (fleet == null) {
      return;
    }
    flushKvEvents();
    awaitOutstanding();
    for (SimEngine engine : fleet.engines()) {
      RouterClients.await(clients.workers.deregister(
          WorkerKey.newBuilder().setModel(model).setWorkerId(engine.workerId()).build()));
    }
  }
}
