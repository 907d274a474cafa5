package io.kvrouter.cluster.models;

import io.kvrouter.core.explain.DecisionLog;
import io.kvrouter.core.indexer.ApproximateKvIndex;
import io.kvrouter.core.indexer.KvEventSequencer;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.selection.SelectionView;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The node's {@link ModelSlot}s, by model: the one place a slot is created ({@link #open}) and removed
 * ({@link #close}). A model the node has never heard of has no slot, and looking it up ({@link #find}) creates
 * nothing, so calls naming unknown models leave nothing behind.
 *
 * @param <C> the admission actor's command type
 */
public final class ModelSlots<C> {
  /** What every slot's KV index and decision log are made with. */
  public record Settings(long approximateTtlMillis, int approximateMaxEntries, KvEventSequencer.Settings reorder,
      int decisionsRecent) {
    /** {@code decisionsRecent} 0: the node records no decisions. */
    public boolean recordsDecisions() {
      return decisionsRecent > 0;
    }
  }

  private final ConcurrentHashMap<String, ModelSlot<C>> slots = new ConcurrentHashMap<>();
  private final Settings settings;
  private final LongSupplier clock;
  private final String node;

  /** @param node this node's address, as explanations name it */
  public ModelSlots(Settings settings, LongSupplier clock, String node) {
    this.settings = settings;
    this.clock = clock;
    this.node = node;
  }

  /** The model's slot, or null when this node holds nothing for it. */
  public ModelSlot<C> find(String model) {
    return slots.get(model);
  }

  /** The model's slot, created empty if the node holds none (by the admission actor or the replica actor). */
  public ModelSlot<C> open(String model) {
    return slots.computeIfAbsent(model, m -> new ModelSlot<>(m,
        new ModelKvIndex(settings.approximateTtlMillis(), settings.approximateMaxEntries(),
            ApproximateKvIndex.DEFAULT_PRUNE_TARGET_RATIO, clock),
        settings.reorder(), settings.recordsDecisions() ? new DecisionLog(settings.decisionsRecent()) : null,
        clock, node));
  }

  /** Forgets the model: removes {@code slot} unless a newer slot already replaced it. */
  public void close(String model, ModelSlot<?> slot) {
    slots.remove(model, slot);
  }

  /** The node's current view of a model, or null. */
  public SelectionView view(String model) {
    ModelSlot<C> slot = slots.get(model);
    return slot == null ? null : slot.view();
  }

  /** Installs {@code view} in its model's slot (opened if need be) if it is newer; returns whether it did. */
  public boolean publish(SelectionView view) {
    return open(view.model()).publish(view);
  }

  /** Models with at least one registered worker, sorted. */
  public List<String> models() {
    return slots.values().stream().filter(ModelSlot::isKnown).map(ModelSlot::model).sorted().toList();
  }

  /** Every model this node holds a slot for, known or not. */
  public Set<String> held() {
    return Set.copyOf(slots.keySet());
  }

  /** Every slot, for housekeeping that walks them (the KV event subscriber's tick). */
  public Iterable<ModelSlot<C>> all() {
    return slots.values();
  }
}
