package io.kvrouter.cluster;

import io.kvrouter.core.selection.SelectionView;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * The node's views, one {@code AtomicReference<SelectionView>} per model. Admission actors on this node publish into
 * it; inline Selects read from it without touching any actor.
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

  public void publish(SelectionView view) {
    slot(view.model()).set(view);
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
