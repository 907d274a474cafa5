package io.kvrouter.core.membership;

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
import java.util.ArrayList;
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
 *
 * <p>The owner's membership changes by commands and tells its {@link Changes} (the replication log); a replica's
 * ({@link #of} with {@link Changes#NONE}) adopts the owner's {@link ViewState}s instead.
 */
public final class Membership {
  /** Who learns what changed: the owner's replication log (a replica's membership tells no one). */
  public interface Changes {
    Changes NONE = new Changes() {
      @Override
      public void viewChanged() {}

      @Override
      public void rankChanged(Rank rank) {}
    };

    /** Membership, configs or policy changed: a new view was published. */
    void viewChanged();

    /** The rank's load record changed. */
    void rankChanged(Rank rank);
  }

  private final String model;
  private final long heartbeatTimeoutMillis;
  private final KvOverlapSource overlapSource;
  private final ActivePrefixSource activePrefix;
  private final Consumer<SelectionView> publisher;
  private final Changes changes;
  private final TreeMap<String, WorkerConfig> workers = new TreeMap<>();
  private final Map<Rank, LoadCell> cells = new HashMap<>();
  private long epoch;
  private PolicyConfig policy = PolicyConfig.defaults();
  private PickerSlot picker = newPicker(policy);
  private long viewVersion;
  private long loadSeq;
  private SelectionView view;

  private Membership(String model, long epoch, long heartbeatTimeoutMillis, KvOverlapSource overlapSource,
      ActivePrefixSource activePrefix, Consumer<SelectionView> publisher, Changes changes) {
    this.model = model;
    this.epoch = epoch;
    this.heartbeatTimeoutMillis = heartbeatTimeoutMillis;
    this.overlapSource = overlapSource;
    this.activePrefix = activePrefix;
    this.publisher = publisher;
    this.changes = changes;
  }

  /** A fresh model's membership: no worker, default policy; publishes view version 1 of {@code epoch}. */
  public static Membership fresh(String model, long epoch, long heartbeatTimeoutMillis, KvOverlapSource overlapSource,
      ActivePrefixSource activePrefix, Consumer<SelectionView> publisher, Changes changes) {
    Membership membership = new Membership(model, epoch, heartbeatTimeoutMillis, overlapSource, activePrefix,
        publisher, changes);
    membership.viewVersion = 1;
    membership.publish();
    return membership;
  }

  /**
   * The membership {@code state} describes, with fresh cells and a picker of its policy (seeded if the policy names
   * a seed). Nothing is published until {@link #publish()}, so the caller can fill the cells first.
   *
   * @param changes {@link Changes#NONE} for a replica
   */
  public static Membership of(ViewState state, long heartbeatTimeoutMillis, KvOverlapSource overlapSource,
      ActivePrefixSource activePrefix, Consumer<SelectionView> publisher, Changes changes) {
    Membership membership = new Membership(state.model(), state.epoch(), heartbeatTimeoutMillis, overlapSource,
        activePrefix, publisher, changes);
    membership.setState(state);
    return membership;
  }

  public SelectionView view() {
    return view;
  }

  public PolicyConfig policy() {
    return policy;
  }

  public long viewVersion() {
    return viewVersion;
  }

  public Collection<WorkerConfig> workers() {
    return workers.values();
  }

  /** The rank's cell, or null if no worker has that rank. */
  public LoadCell cell(Rank rank) {
    return cells.get(rank);
  }

  /** Membership, configs and policy as of the current view. */
  public ViewState viewState() {
    return new ViewState(model, epoch, viewVersion, new ArrayList<>(workers.values()), policy.policy().wireName(),
        policy.toParameters());
  }

  /** The rank's load as its cell holds it, or null if no worker has that rank. */
  public RankRecord rankRecord(Rank rank) {
    LoadCell cell = cells.get(rank);
    return cell == null ? null : new RankRecord(rank.workerId(), rank.dpRank(), cell.booked(), cell.reported());
  }

  /** Every rank's load record, in (workerId, dpRank) order. */
  public List<RankRecord> rankRecords() {
    List<RankRecord> records = new ArrayList<>(cells.size());
    for (WorkerConfig worker : workers.values()) {
      for (int r = worker.dpStart(); r < worker.dpStart() + worker.dpSize(); r++) {
        records.add(rankRecord(worker.rank(r)));
      }
    }
    return records;
  }

  /** Adds a worker (validated; identical re-registration is a no-op, a different config a conflict). */
  public Registered register(WorkerConfig config) {
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
    addCells(config);
    republish();
    return new Registered(true, viewVersion);
  }

  /**
   * A new rank's cell starts from an idle record numbered above every record this membership made before, so a
   * replica that kept an older cell of the same rank (the worker left and came back within one delta) takes it.
   */
  private void addCells(WorkerConfig config) {
    for (int r = config.dpStart(); r < config.dpStart() + config.dpSize(); r++) {
      Rank rank = config.rank(r);
      if (!cells.containsKey(rank)) {
        LoadCell cell = new LoadCell();
        cell.apply(new RankLoad(++loadSeq, 0, 0, 0));
        cells.put(rank, cell);
        rankChanged(rank);
      }
    }
  }

  /** Removes a worker and its cells; throws NOT_FOUND for an unknown one. */
  public void deregister(String workerId) {
    if (workers.remove(workerId) == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    cells.keySet().removeIf(rank -> rank.workerId().equals(workerId));
    republish();
  }

  /** Records an engine's load report (its heartbeat); validated as a whole before any rank changes. */
  public void reportLoad(String workerId, List<RankReport> ranks, long nowMillis) {
    WorkerConfig worker = workers.get(workerId);
    if (worker == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    for (RankReport report : ranks) {
      worker.requireRank(report.dpRank());
      if (report.decodeBlocks() < 0 || report.prefillTokens() < 0 || report.waitingRequests() < 0) {
        throw RoutingError.invalid(RoutingError.INVALID_SIZE, "reported loads must not be negative").toException();
      }
      io.kvrouter.core.selection.RequestLimits.requireLoraAdapters(report.loraAdapters());
    }
    for (RankReport report : ranks) {
      Rank rank = worker.rank(report.dpRank());
      cells.get(rank).report(
          ReportedLoad.of(report.decodeBlocks(), report.prefillTokens(), report.waitingRequests(), nowMillis,
              report.loraAdapters()));
      rankChanged(rank);
    }
  }

  /** Sets a rank's last engine report as an earlier incarnation knew it (recovery); ignored for an unknown rank. */
  public void restoreReport(Rank rank, ReportedLoad reported) {
    LoadCell cell = cells.get(rank);
    if (cell != null && reported != null) {
      cell.report(reported);
      rankChanged(rank);
    }
  }

  /** Switches policy and/or parameters with a fresh picker; returns the new view version. */
  public long setPolicy(String policyName, Map<String, String> parameters) {
    PolicyConfig next = policy.with(policyName, parameters);
    policy = next;
    picker = newPicker(next);
    republish();
    return viewVersion;
  }

  /** Adds to a rank's booked load and returns the record now in its cell. */
  public RankLoad addLoad(Rank rank, int requests, long prefill, long decode) {
    LoadCell cell = cells.get(rank);
    return applyLoad(rank, cell, cell.booked().plus(++loadSeq, requests, prefill, decode));
  }

  /**
   * A new booking's load on {@code rank} at {@code nowMillis}: one request more, and one more recent booking while
   * the policy's load-bound window is on; returns the record now in its cell.
   */
  public RankLoad addBooking(Rank rank, long prefill, long decode, long nowMillis) {
    LoadCell cell = cells.get(rank);
    return applyLoad(rank, cell,
        cell.booked().booked(++loadSeq, prefill, decode, nowMillis, policy.loadBoundWindowMillis()));
  }

  private RankLoad applyLoad(Rank rank, LoadCell cell, RankLoad next) {
    cell.apply(next);
    rankChanged(rank);
    return next;
  }

  /**
   * Replica side: takes the owner's {@code state} (the caller checked it is newer) and publishes its view. Cells of
   * ranks that stay are kept within one epoch (load records keep landing in them); a new epoch starts from fresh
   * cells, since its records are numbered from scratch. The picker is kept while the policy is unchanged.
   *
   * @return the workers that left
   */
  public List<String> adopt(ViewState state) {
    List<String> removed = new ArrayList<>(workers.keySet());
    for (WorkerConfig worker : state.workers()) {
      removed.remove(worker.workerId());
    }
    if (state.epoch() != epoch) {
      cells.clear();
      epoch = state.epoch();
    }
    setState(state);
    publish();
    return removed;
  }

  private void setState(ViewState state) {
    workers.clear();
    for (WorkerConfig worker : state.workers()) {
      workers.put(worker.workerId(), worker);
    }
    cells.keySet().removeIf(rank -> !workers.containsKey(rank.workerId())
        || !workers.get(rank.workerId()).hasRank(rank.dpRank()));
    for (WorkerConfig worker : state.workers()) {
      for (int r = worker.dpStart(); r < worker.dpStart() + worker.dpSize(); r++) {
        cells.computeIfAbsent(worker.rank(r), rank -> new LoadCell());
      }
    }
    PolicyConfig next = PolicyConfig.defaults().with(state.policy(), state.parameters());
    if (view == null || !next.equals(policy)) {
      policy = next;
      picker = newPicker(next);
    }
    viewVersion = state.version();
  }

  private static PickerSlot newPicker(PolicyConfig config) {
    long seed = config.seed() != null ? config.seed() : ThreadLocalRandom.current().nextLong();
    return new PickerSlot(config.policy(), new PickerState(seed, 0));
  }

  private void rankChanged(Rank rank) {
    changes.rankChanged(rank);
  }

  private void republish() {
    viewVersion++;
    publish();
  }

  /** Builds and publishes the view of the current workers, cells and policy at the current version. */
  public void publish() {
    view = new SelectionView(model, epoch, viewVersion, workers.values(), cells, policy, picker, overlapSource,
        activePrefix, heartbeatTimeoutMillis);
    changes.viewChanged();
    publisher.accept(view);
  }
}
