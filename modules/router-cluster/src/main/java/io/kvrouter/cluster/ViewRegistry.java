package io.kvrouter.cluster;

import io.kvrouter.core.selection.SelectionView;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * The node's views, one {@code AtomicReference<SelectionView>} per model. The admission actor of a model hosted here
 * and the node's replica of a model hosted elsewhere publish into it; inline Selects read from it without touching
 * any actor. A view replaces the current one only if it is newer by {@code (epoch, version)}, whoever publishes it:
 * a late message of an old incarnation never overwrites its successor's view.
 */
public final class ViewRegistry implements Extension {
  private final ConcurrentHashMap<String, AtomicReference<SelectionView>> views = new ConcurrentHashMap<>();

  public static ViewRegistry get(ActorSystem<?> system) {
    return Id.INSTANCE.apply(system);
  }

  /** The model's slot, created empty on first use; the reference stays the same for the node's lifetime. */
  public AtomicReference<SelectionView> slot(String model) {
    return views.computeIfAbsent(model, m -> new AtomicReference<>());
  }

  /** The current view of a model, or null if this node has none. */
  public SelectionView view(String model) {
    AtomicReference<SelectionView> slot = views.get(model);
    return slot == null ? null : slot.get();
  }

  /** Models with a slot, empty or not. */
  java.util.Set<String> modelsHeld() {
    return views.keySet();
  }

  /** Drops the model's slot (its admission actor passivated). */
  void forget(String model) {
    views.remove(model);
  }

  /** Installs {@code view} if it is newer than the model's current view; returns whether it did. */
  public boolean publish(SelectionView view) {
    AtomicReference<SelectionView> slot = slot(view.model());
    while (true) {
      SelectionView current = slot.get();
      if (!view.isNewerThan(current)) {
        return false;
      }
      if (slot.compareAndSet(current, view)) {
        return true;
      }
    }
  }

  /** Models with at least one registered worker, sorted. */
  public List<String> models() {
    return views.entrySet().stream()
        .filter(e -> e.getValue().get() != null && !e.getValue().get().isEmpty())
        .map(java.util.Map.Entry::getKey)
        .sorted()
        .toList();
  }

  static final class Id extends ExtensionId<ViewRegistry> {
    static final Id INSTANCE = new Id();

    @Override
    public ViewRegistry createExtension(ActorSystem<?> system) {
      return new ViewRegistry();
    }
  }
}
