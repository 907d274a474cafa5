package io.kvrouter.cluster;

import java.util.HashSet;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The replica actors of this node's region as the receptionist last listed them ({@link ReplicaNode} keeps it
 * current), read by the admission actors hosted here: they replicate to every listed node but their own, and ask
 * every listed node, their own included, for its copy when they recover.
 */
final class ReplicaPeers {
  private volatile ActorRef<ReplicaNode.Command> self;
  private volatile Set<ActorRef<ReplicaNode.Command>> listed = Set.of();
  /** {@code listed} without {@code self}, kept so that a flush (every few ms per model) does not build it. */
  private volatile Set<ActorRef<ReplicaNode.Command>> others = Set.of();

  /** Set once, when the node's replica actor has been created (before any admission actor starts). */
  void bind(ActorRef<ReplicaNode.Command> replicaNode) {
    this.self = replicaNode;
    listed(listed);
  }

  /** This node's replica actor. */
  ActorRef<ReplicaNode.Command> self() {
    return self;
  }

  /** The region's other replica actors. */
  Set<ActorRef<ReplicaNode.Command>> others() {
    return others;
  }

  /** Every replica actor of the region, this node's included. */
  Set<ActorRef<ReplicaNode.Command>> all() {
    Set<ActorRef<ReplicaNode.Command>> all = new HashSet<>(others);
    all.add(self);
    return all;
  }

  void listed(Set<ActorRef<ReplicaNode.Command>> listing) {
    Set<ActorRef<ReplicaNode.Command>> withoutSelf = new HashSet<>(listing);
    withoutSelf.remove(self);
    listed = Set.copyOf(listing);
    others = Set.copyOf(withoutSelf);
  }
}
