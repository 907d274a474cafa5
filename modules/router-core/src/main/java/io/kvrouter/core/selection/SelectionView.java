package io.kvrouter.core.selection;

import io.kvrouter.core.load.LoadCell;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.policy.PickerSlot;
import io.kvrouter.core.policy.PolicyConfig;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one selection reads, immutable except for the load cells and the picker (each safe on its own). Published by
 * the admission actor when membership, configs or the policy change; loads change through the cells in place.
 */
public final class SelectionView {
  private final String model;
  private final long epoch;
  private final long version;
  private final int blockSize;
  private final Map<String, WorkerConfig> workers;
  private final Rank[] ranks;
  private final WorkerConfig[] rankWorkers;
  private final LoadCell[] cells;
  private final Map<Rank, Integer> rankIndexes;
  private final PolicyConfig policy;
  private final PickerSlot picker;
  private final KvOverlapSource overlapSource;
  private final ActivePrefixSource activePrefix;
  private final long heartbeatTimeoutMillis;
  /** Workers per {@link WorkerRole} ordinal. */
  private final int[] workersByRole = new int[WorkerRole.values().length];

  /**
   * @param epoch the incarnation of the admission state that published this view; orders views with the version
   * @param workers the model's workers; ranks are laid out in (workerId, dpRank) order
   * @param cells one cell per rank; the actor keeps writing the same cells after publishing
   */
  public SelectionView(String model, long epoch, long version, Collection<WorkerConfig> workers,
      Map<Rank, LoadCell> cells, PolicyConfig policy, PickerSlot picker, KvOverlapSource overlapSource,
      ActivePrefixSource activePrefix, long heartbeatTimeoutMillis) {
    this.model = model;
    this.epoch = epoch;
    this.version = version;
    TreeMap<String, WorkerConfig> sorted = new TreeMap<>();
    for (WorkerConfig worker : workers) {
      sorted.put(worker.workerId(), worker);
    }
    this.workers = Collections.unmodifiableMap(sorted);
    this.blockSize = sorted.isEmpty() ? 0 : sorted.firstEntry().getValue().blockSize();
    List<Rank> rankList = new ArrayList<>();
    List<WorkerConfig> owners = new ArrayList<>();
    for (WorkerConfig worker : sorted.values()) {
      workersByRole[worker.role().ordinal()]++;
      for (int r = worker.dpStart(); r < worker.dpStart() + worker.dpSize(); r++) {
        rankList.add(worker.rank(r));
        owners.add(worker);
      }
    }
    this.ranks = rankList.toArray(Rank[]::new);
    this.rankWorkers = owners.toArray(WorkerConfig[]::new);
    this.cells = new LoadCell[ranks.length];
    this.rankIndexes = new HashMap<>();
    for (int i = 0; i < ranks.length; i++) {
      LoadCell cell = cells.get(ranks[i]);
      if (cell == null) {
        throw new IllegalArgumentException("no load cell for rank " + ranks[i]);
      }
      this.cells[i] = cell;
      rankIndexes.put(ranks[i], i);
    }
    this.policy = policy;
    this.picker = picker;
    this.overlapSource = overlapSource;
    this.activePrefix = activePrefix;
    this.heartbeatTimeoutMillis = heartbeatTimeoutMillis;
  }

  public String model() {
    return model;
  }

  public long epoch() {
    return epoch;
  }

  public long version() {
    return version;
  }

  /** Whether this view is ordered after {@code other} by (epoch, version); any view is newer than null. */
  public boolean isNewerThan(SelectionView other) {
    return other == null || isNewer(epoch, version, other.epoch, other.version);
  }

  /**
   * The one ordering of everything replicated (views, load records, replication sequence numbers): by
   * (epoch, number), a newer epoch always winning.
   */
  public static boolean isNewer(long epoch, long number, long otherEpoch, long otherNumber) {
    return epoch != otherEpoch ? epoch > otherEpoch : number > otherNumber;
  }

  /** The model's block size (every worker of a model shares it); 0 when there is no worker. */
  public int blockSize() {
    return blockSize;
  }

  public boolean isEmpty() {
    return ranks.length == 0;
  }

  public Map<String, WorkerConfig> workers() {
    return workers;
  }

  public WorkerConfig worker(String workerId) {
    return workers.get(workerId);
  }

  public int rankCount() {
    return ranks.length;
  }

  public Rank rank(int index) {
    return ranks[index];
  }

  public WorkerConfig rankWorker(int index) {
    return rankWorkers[index];
  }

  public LoadCell cell(int index) {
    return cells[index];
  }

  /** The index of {@code rank}, or -1 if the view has no such rank. */
  public int indexOf(Rank rank) {
    Integer index = rankIndexes.get(rank);
    return index == null ? -1 : index;
  }

  /** How many of the model's workers serve {@code role}. */
  public int workerCount(WorkerRole role) {
    return workersByRole[role.ordinal()];
  }

  /**
   * The role a single-rank selection chooses from: aggregated workers when the model has any (or no worker at all),
   * else decode workers (which then do their own prefill), else prefill workers (a model that cannot decode; Books
   * refuse it).
   */
  public WorkerRole singleRankRole() {
    if (workerCount(WorkerRole.AGGREGATED) > 0 || workers.isEmpty()) {
      return WorkerRole.AGGREGATED;
    }
    return workerCount(WorkerRole.DECODE) > 0 ? WorkerRole.DECODE : WorkerRole.PREFILL;
  }

  public PolicyConfig policy() {
    return policy;
  }

  public PickerSlot picker() {
    return picker;
  }

  public KvOverlapSource overlapSource() {
    return overlapSource;
  }

  public ActivePrefixSource activePrefix() {
    return activePrefix;
  }

  /** A rank that has reported load is unavailable once its last report is older than this; 0 disables it. */
  public long heartbeatTimeoutMillis() {
    return heartbeatTimeoutMillis;
  }
}
