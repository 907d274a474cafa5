package io.kvrouter.cluster.replication;

import io.kvrouter.cluster.models.ModelSlots;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.replication.Staleness;
import io.kvrouter.core.selection.SelectionView;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/** What a node's facades ask of its {@link ReplicaActor}: adopt a view a reply carried, read a model's staleness. */
public final class ReplicaClient {
  private final ActorRef<ReplicaActor.Command> replicaActor;
  private final ModelSlots<?> slots;
  private final Scheduler scheduler;
  private final Duration timeout;

  public ReplicaClient(ActorRef<ReplicaActor.Command> replicaActor, ModelSlots<?> slots, Scheduler scheduler,
      Duration timeout) {
    this.replicaActor = replicaActor;
    this.slots = slots;
    this.scheduler = scheduler;
    this.timeout = timeout;
  }

  /** This node's replica actor. */
  public ActorRef<ReplicaActor.Command> actor() {
    return replicaActor;
  }

  /**
   * Completes once this node's view of the model is at least as new as {@code view}: at once when it already is (the
   * actor runs here and published it, or replication got here first) or when the view is empty and this node has
   * none, else after the node's replica applied it.
   */
  public CompletionStage<?> adopt(ViewState view) {
    SelectionView current = view == null ? null : slots.view(view.model());
    boolean nothingToAdopt = view == null
        || (current == null ? view.workers().isEmpty() : !SelectionView.isNewer(view.epoch(), view.version(),
            current.epoch(), current.version()));
    if (nothingToAdopt) {
      return CompletableFuture.completedFuture(null);
    }
    return AskPattern.<ReplicaActor.Command, org.apache.pekko.Done>ask(replicaActor,
        replyTo -> new ReplicaActor.AdoptView(view, replyTo), timeout, scheduler);
  }

  /** This node's staleness of the model's copy, or null when it keeps none. */
  public CompletionStage<Staleness> staleness(String model) {
    return staleness(model, timeout);
  }

  public CompletionStage<Staleness> staleness(String model, Duration askTimeout) {
    return AskPattern.<ReplicaActor.Command, ReplicaActor.StalenessReply>ask(replicaActor,
        replyTo -> new ReplicaActor.GetStaleness(model, replyTo), askTimeout, scheduler)
        .thenApply(ReplicaActor.StalenessReply::staleness);
  }
}
