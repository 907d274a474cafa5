package io.kvrouter.core.admission;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.policy.PickerSlot;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.policy.PolicyConfig;
import io.kvrouter.core.selection.ActivePrefixSource;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionView;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;

/**
 * A model's workers, their load cells and its policy, and the view built from them: every change of membership,
 * configs or policy publishes a new {@link SelectionView} (before the command that caused it is answered). Loads do
 * not republish: they change in the cells the published view shares.
 */
final class Membership {
  private final String model;
  private final long heartbeatTimeoutMillis;
  private final KvOverlapSource overlapSource;
  private final ActivePrefixSource activePrefix;
  private final Consumer<SelectionView> publisher;
  private final TreeMap<String, WorkerConfig> workers = new TreeMap<>();
  private final Map<Rank, LoadCell> cells = new HashMap<>();
  private PolicyConfig policy = PolicyConfig.defaults();
  private PickerSlot picker = newPicker(policy);
  private long viewVersion;
  private long loadSeq;
  private SelectionView view;

  Membership(String model, long heartbeatTimeoutMillis, KvOverlapSource overlapSource,
      ActivePrefixSource activePrefix, Consumer<SelectionView> publisher) {
    this.model = model;
    this.heartbeatTimeoutMillis = heartbeatTimeoutMillis;
    this.overlapSource = overlapSource;
    this.activePrefix = activePrefix;
    this.publisher = publisher;
    republish();
  }

  SelectionView view() {
    return view;
  }

  PolicyConfig policy() {
    return policy;
  }

  long viewVersion() {
    return viewVersion;
  }

  Collection<WorkerConfig> workers() {
    return workers.values();
  }

  LoadCell cell(Rank rank) {
    return cells.get(rank);
  }

  /** Adds a worker (validated; identical re-registration is a no-op, a different config a conflict). */
  Registered register(WorkerConfig config) {
    RequestLimits.requireWorkerShape(config);
    WorkerConfig existing = workers.get(config.workerId());
    if (existing != null) {
      if (existing.equals(config)) {
        return new Registered(false, viewVersion);
      }
      throw new RoutingError(RoutingError.Code.ALREADY_EXISTS, RoutingError.WORKER_CONFIG_CONFLICT,
          "worker '" + RoutingError.echo(config.workerId()) + "' is already registered for model '"
              + RoutingError.echo(model)
              + "' with a different config; deregister it first").toException();
    }
    if (!workers.isEmpty() && workers.firstEntry().getValue().blockSize() != config.blockSize()) {
      throw RoutingError.invalid(RoutingError.BLOCK_SIZE_MISMATCH,
          "model '" + RoutingError.echo(model) + "' uses block_size "
          + workers.firstEntry().getValue().blockSize() + ", got " + config.blockSize()).toException();
    }
    workers.put(config.workerId(), config);
    for (int r = config.dpStart(); r < config.dpStart() + config.dpSize(); r++) {
      cells.computeIfAbsent(config.rank(r), rank -> new LoadCell());
    }
    republish();
    return new Registered(true, viewVersion);
  }

  /** Removes a worker and its cells; throws NOT_FOUND for an unknown one. */
  void deregister(String workerId) {
    if (workers.remove(workerId) == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    cells.keySet().removeIf(rank -> rank.workerId().equals(workerId));
    republish();
  }

  /** Records an engine's load report (its heartbeat); validated as a whole before any rank changes. */
  void reportLoad(String workerId, List<RankReport> ranks, long nowMillis) {
    WorkerConfig worker = workers.get(workerId);
    if (worker == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    for (RankReport report : ranks) {
      worker.requireRank(report.dpRank());
      if (report.decodeBlocks() < 0 || report.prefillTokens() < 0 || report.waitingRequests() < 0) {
        throw RoutingError.invalid(RoutingError.INVALID_SIZE, "reported loads must not be negative").toException();
      }
    }
    for (RankReport report : ranks) {
      cells.get(worker.rank(report.dpRank())).report(
          new ReportedLoad(report.decodeBlocks(), report.prefillTokens(), report.waitingRequests(), nowMillis));
    }
  }

  /** Switches policy and/or parameters with a fresh picker; returns the new view version. */
  long setPolicy(String policyName, Map<String, String> parameters) {
    PolicyConfig next = policy.with(policyName, parameters);
    policy = next;
    picker = newPicker(next);
    republish();
    return viewVersion;
  }

  /** Adds to a rank's booked load and returns the record now in its cell. */
  RankLoad addLoad(Rank rank, int requests, long prefill, long decode) {
    LoadCell cell = cells.get(rank);
    RankLoad next = cell.booked().plus(++loadSeq, requests, prefill, decode);
    cell.apply(next);
    return next;
  }

  private static PickerSlot newPicker(PolicyConfig config) {
    long seed = config.seed() != null ? config.seed() : ThreadLocalRandom.current().nextLong();
    return new PickerSlot(config.policy(), new PickerState(seed, 0));
  }

  private void republish() {
    view = new SelectionView(model, ++viewVersion, workers.values(), cells, policy, picker, overlapSource,
        activePrefix, heartbeatTimeoutMillis);
    publisher.accept(view);
  }
}
