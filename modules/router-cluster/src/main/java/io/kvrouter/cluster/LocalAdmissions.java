package io.kvrouter.cluster;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The admission actors hosted on this node, by model. A model's {@link ModelClient} sends straight to its actor
 * while the actor lives here, instead of through the shard region and the shard (two mailbox hops per command), and
 * falls back to the region otherwise: when the model's shard lives on another node, before its actor has started here,
 * and from the moment it stops (a rebalance hands the shard off). A command racing that stop is lost with the actor
 * and its ask times out, which a rebalance does to in-flight commands anyway: the caller gets an error, never a
 * silent booking. (Register never takes the shortcut: see {@link ModelClient#register}.) A model whose actor
 * passivated has no slot here.
 */
final class LocalAdmissions {
  private final ConcurrentHashMap<String, AtomicReference<ActorRef<ModelAdmission.Command>>> actors =
      new ConcurrentHashMap<>();

  /** The model's slot: holds its actor while it runs on this node, else null. */
  AtomicReference<ActorRef<ModelAdmission.Command>> slot(String model) {
    return actors.computeIfAbsent(model, m -> new AtomicReference<>());
  }

  /** Whether the model's admission actor runs on this node now. */
  boolean hosts(String model) {
    AtomicReference<ActorRef<ModelAdmission.Command>> slot = actors.get(model);
    return slot != null && slot.get() != null;
  }

  void started(String model, ActorRef<ModelAdmission.Command> actor) {
    slot(model).set(actor);
  }

  java.util.Set<String> modelsHeld() {
    return actors.keySet();
  }

  /** Drops the model's slot (its actor passivated: the node keeps nothing for the model). */
  void forget(String model) {
    actors.remove(model);
  }

  /** Clears the slot unless a newer incarnation already took it. */
  void stopped(String model, ActorRef<ModelAdmission.Command> actor) {
    AtomicReference<ActorRef<ModelAdmission.Command>> slot = actors.get(model);
    if (slot != null) {
      slot.compareAndSet(actor, null);
    }
  }
}
