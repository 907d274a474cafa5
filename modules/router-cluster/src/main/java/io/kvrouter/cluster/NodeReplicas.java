package io.kvrouter.cluster;

import io.kvrouter.core.replication.Staleness;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.selection.SelectionView;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/** What a facade asks of its node's {@link ReplicaNode}: adopt a view a reply carried, read a model's staleness. */
final class NodeReplicas {
  private final ActorRef<ReplicaNode.Command> replicaNode;
  private final ViewRegistry registry;
  private final Scheduler scheduler;
  private final Duration timeout;

  NodeReplicas(ActorRef<ReplicaNode.Command> replicaNode, ViewRegistry registry, Scheduler scheduler,
      Duration timeout) {
    this.replicaNode = replicaNode;
    this.registry = registry;
    this.scheduler = scheduler;
    this.timeout = timeout;
  }

  /**
   * Completes once this node's view of the model is at least as new as {@code view}: at once when it already is (the
   * actor runs here and published it, or replication got here first) or when the view is empty and this node has
   * none, else after the node's replica applied it.
   */
  CompletionStage<?> adopt(ViewState view) {
    SelectionView current = view == null ? null : registry.view(view.model());
    boolean nothingToAdopt = view == null
        || (current == null ? view.workers().isEmpty() : !SelectionView.isNewer(view.epoch(), view.version(),
            current.epoch(), current.version()));
    if (nothingToAdopt) {
      return CompletableFuture.completedFuture(null);
    }
    return AskPattern.<ReplicaNode.Command, org.apache.pekko.Done>ask(replicaNode,
        replyTo -> new ReplicaNode.AdoptView(view, replyTo), timeout, scheduler);
  }

  /** This node's staleness of the model's copy, or null when it keeps none. */
  CompletionStage<Staleness> staleness(String model) {
    return staleness(model, timeout);
  }

  CompletionStage<Staleness> staleness(String model, Duration askTimeout) {
    return AskPattern.<ReplicaNode.Command, ReplicaNode.StalenessReply>ask(replicaNode,
        replyTo -> new ReplicaNode.GetStaleness(model, replyTo), askTimeout, scheduler)
        .thenApply(ReplicaNode.StalenessReply::staleness);
  }
}
