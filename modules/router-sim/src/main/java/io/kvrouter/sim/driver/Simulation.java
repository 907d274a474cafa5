package io.kvrouter.sim.driver;

import io.kvrouter.sim.engine.EngineRank;
import io.kvrouter.sim.engine.SimRequest;
import io.kvrouter.sim.workload.Workload;
import io.kvrouter.sim.workload.WorkloadRequest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * One run of a workload on a fleet, requests placed by one {@link Placement}: a discrete-event loop over arrivals,
 * engine steps and load-report ticks, handled strictly one at a time in simulated-time order (ties in the order they
 * were scheduled), each router call awaited before the next, so a run is deterministic for its seeds.
 */
public final class Simulation {
  /** Bounds and periods of a run. */
  public record Settings(long loadReportMicros, long maxEvents, long maxSimMicros) {
    /** Load reports every 2 s (the router's heartbeat timeout is 10 s); at most 50M events or 24 h. */
    public static Settings defaults() {
      return new Settings(2_000_000, 50_000_000, 86_400_000_000L);
    }
  }

  /** Progress of a run, for stderr. */
  @FunctionalInterface
  public interface Progress {
    void update(String label, long completed, long arrived, long simMicros);
  }

  private record Event(long time, long seq, Object what) {}

  private record Arrival(WorkloadRequest request) {}

  private record StepEnd(Fleet.Unit unit) {}

  private record Tick() {}

  private record InFlight(WorkloadRequest source, Placement.Placed placed, int idealHitBlocks) {}

  /** A request the router holds in its admission queue. */
  private record Waiting(WorkloadRequest source, SimRequest request, int idealHitBlocks) {}

  private final Fleet fleet;
  private final Workload workload;
  private final Placement placement;
  private final Pacer pacer;
  private final Progress progress;
  private final Settings settings;
  private final PriorityQueue<Event> queue = new PriorityQueue<>(
      (a, b) -> a.time != b.time ? Long.compare(a.time, b.time) : Long.compare(a.seq, b.seq));
  private final Map<String, InFlight> inFlight = new HashMap<>();
  private final Map<String, Waiting> waiting = new HashMap<>();
  private final List<RunResult.Served> served = new ArrayList<>();
  private final Set<Long> everSeen = new HashSet<>();
  private final List<Long> ttft = new ArrayList<>();
  private final List<Long> endToEnd = new ArrayList<>();
  private long seq;
  private long now;
  private long arrivalsPending;
  private long arrived;
  private long completed;
  private long rejected;
  private long promptTokens;
  private long cachedTokens;
  private long idealCachedTokens;
  private long outputTokens;
  private long firstArrival = -1;
  private long lastCompletion;

  public Simulation(Fleet fleet, Workload workload, Placement placement, Pacer pacer, Progress progress,
      Settings settings) {
    this.fleet = fleet;
    this.workload = workload;
    this.placement = placement;
    this.pacer = pacer;
    this.progress = progress;
    this.settings = settings;
  }

  public RunResult run() {
    long wallStart = System.nanoTime();
    pacer.startRun();
    placement.open(fleet);
    try {
      workload.start(this::scheduleArrival);
      schedule(settings.loadReportMicros(), new Tick());
      long events = 0;
      while (!queue.isEmpty()) {
        if (++events > settings.maxEvents()) {
          throw new IllegalStateException("run exceeded " + settings.maxEvents() + " events");
        }
        Event event = queue.poll();
        if (event.time > settings.maxSimMicros()) {
          throw new IllegalStateException("run exceeded " + settings.maxSimMicros() / 1e6 + " simulated seconds");
        }
        now = event.time;
        pacer.advanceTo(now);
        if (event.what instanceof Arrival arrival) {
          arrivalsPending--;
          arrive(arrival.request);
        } else if (event.what instanceof StepEnd end) {
          endStep(end.unit);
        } else {
          placement.reportLoads(fleet);
          if (arrivalsPending > 0 || !inFlight.isEmpty() || !waiting.isEmpty()) {
            schedule(now + settings.loadReportMicros(), new Tick());
          }
        }
        settleQueued();
      }
      if (!waiting.isEmpty()) {
        throw new IllegalStateException(waiting.size() + " requests still wait in the router's queue at the end");
      }
    } finally {
      placement.close();
    }
    return result((System.nanoTime() - wallStart) / 1_000_000);
  }

  private void scheduleArrival(long micros, WorkloadRequest request) {
    arrivalsPending++;
    schedule(Math.max(micros, now), new Arrival(request));
  }

  private void schedule(long time, Object what) {
    queue.add(new Event(time, seq++, what));
  }

  /** The unit each session's last placed turn went to. */
  private final java.util.Map<String, Integer> lastUnitOfSession = new java.util.HashMap<>();
  private long sessionTurns;
  private long sessionTurnsKept;

  private void arrive(WorkloadRequest source) {
    arrived++;
    if (firstArrival < 0) {
      firstArrival = now;
    }
    SimRequest request = SimRequest.of(source.id(), now, source.tokens(), source.promptTokens(),
        fleet.config().blockSize());
    int idealHit = idealHit(request);
    Placement.Placed placed = placement.place(request, source);
    if (placed == Placement.QUEUED) {
      waiting.put(request.id(), new Waiting(source, request, idealHit));
      return;
    }
    admit(source, request, placed, idealHit);
  }

  /** The requests the router's queue decided since the last event: each admitted at its engine now, or rejected. */
  private void settleQueued() {
    for (Placement.Late late : placement.settle()) {
      Waiting w = waiting.remove(late.requestId());
      if (w == null) {
        throw new IllegalStateException("the router decided " + late.requestId() + ", which was not waiting");
      }
      admit(w.source(), w.request(), late.placed(), w.idealHitBlocks());
    }
  }

  /** A placed request enters its engine's queue now (null: the router rejected it). */
  private void admit(WorkloadRequest source, SimRequest request, Placement.Placed placed, int idealHit) {
    if (placed == null) {
      rejected++;
      workload.finished(source, now, this::scheduleArrival);
      return;
    }
    Fleet.Unit unit = fleet.unit(placed.unit());
    if (request.totalBlocks() + fleet.config().limits().watermarkBlocks() > unit.rank().cache().capacity()) {
      // the engine refuses a request its KV cache can never hold (vLLM: over max_model_len): counted, run goes on
      rejected++;
      placement.finished(request, placed);
      workload.finished(source, now, this::scheduleArrival);
      return;
    }
    if (source.session() != null) {
      Integer previous = lastUnitOfSession.put(source.session(), placed.unit());
      if (previous != null) {
        sessionTurns++;
        sessionTurnsKept += previous == placed.unit() ? 1 : 0;
      }
    }
    inFlight.put(request.id(), new InFlight(source, placed, idealHit));
    unit.rank().enqueue(request);
    if (!unit.rank().stepping()) {
      beginStep(unit);
    }
  }

  /** Cached blocks the request would find in one infinite cache holding everything seen before. */
  private int idealHit(SimRequest request) {
    long[] hashes = request.blockHashes();
    int hits = 0;
    while (hits < request.hitLimit() && everSeen.contains(hashes[hits])) {
      hits++;
    }
    for (long hash : hashes) {
      everSeen.add(hash);
    }
    return hits;
  }

  private void beginStep(Fleet.Unit unit) {
    long micros = unit.rank().beginStep();
    placement.kvEvents(unit, unit.rank().cache().drainEvents());
    if (micros >= 0) {
      schedule(now + micros, new StepEnd(unit));
    }
  }

  private void endStep(Fleet.Unit unit) {
    EngineRank.StepOutcome outcome = unit.rank().endStep();
    placement.kvEvents(unit, unit.rank().cache().drainEvents());
    for (EngineRank.Active first : outcome.firstTokens()) {
      SimRequest request = first.request();
      InFlight flight = inFlight.get(request.id());
      ttft.add(now - request.arrivalMicros());
      served.add(new RunResult.Served(flight.source.policyClass(), flight.source.strictPriority(),
          request.promptTokens(), request.arrivalMicros(), now - request.arrivalMicros()));
      promptTokens += request.promptTokens();
      cachedTokens += first.cachedTokens();
      idealCachedTokens += flight.idealHitBlocks * (long) request.blockSize();
      placement.prefillDone(request, flight.placed);
    }
    for (EngineRank.Active done : outcome.finished()) {
      SimRequest request = done.request();
      InFlight flight = inFlight.remove(request.id());
      endToEnd.add(now - request.arrivalMicros());
      outputTokens += request.outputTokens();
      completed++;
      lastCompletion = now;
      placement.finished(request, flight.placed);
      workload.finished(flight.source, now, this::scheduleArrival);
      if (completed % 500 == 0) {
        progress.update(placement.label(), completed, arrived, now);
      }
    }
    beginStep(unit);
  }

  private RunResult result(long wallMillis) {
    progress.update(placement.label(), completed, arrived, now);
    long[] busy = fleet.units().stream().mapToLong(u -> u.rank().busyMicros()).toArray();
    long[] servedPerUnit = fleet.units().stream().mapToLong(u -> u.rank().servedRequests()).toArray();
    return new RunResult(placement.label(), completed, rejected, promptTokens, cachedTokens, idealCachedTokens,
        outputTokens, sorted(ttft), sorted(endToEnd), Math.max(0, lastCompletion - firstArrival), busy,
        servedPerUnit, wallMillis, List.copyOf(served), sessionTurns, sessionTurnsKept);
  }

  private static long[] sorted(List<Long> values) {
    return values.stream().mapToLong(Long::longValue).sorted().toArray();
  }
}
