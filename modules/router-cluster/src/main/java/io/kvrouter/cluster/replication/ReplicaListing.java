package io.kvrouter.cluster.replication;

import java.util.HashSet;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The replica actors of this node's region as the receptionist last listed them ({@link ReplicaActor} keeps it
 * current), read by the admission actors hosted here: they replicate to every listed node but their own, and ask
 * every listed node, their own included, for its copy when they recover.
 */
public final class ReplicaListing {
  private volatile ActorRef<ReplicaActor.Command> self;
  private volatile Set<ActorRef<ReplicaActor.Command>> listed = Set.of();
  /** {@code listed} without {@code self}, kept so that a flush (every few ms per model) does not build it. */
  private volatile Set<ActorRef<ReplicaActor.Command>> others = Set.of();

  /** Set once, when the node's replica actor has been created (before any admission actor starts). */
  public void bind(ActorRef<ReplicaActor.Command> replicaNode) {
    this.self = replicaNode;
    listed(listed);
  }

  /** This node's replica actor. */
  public ActorRef<ReplicaActor.Command> self() {
    return self;
  }

  /** The region's other replica actors. */
  public Set<ActorRef<ReplicaActor.Command>> others() {
    return others;
  }

  /** Every replica actor of the region, this node's included. */
  public Set<ActorRef<ReplicaActor.Command>> all() {
    Set<ActorRef<ReplicaActor.Command>> all = new HashSet<>(others);
    all.add(self);
    return all;
  }

  public void listed(Set<ActorRef<ReplicaActor.Command>> listing) {
    Set<ActorRef<ReplicaActor.Command>> withoutSelf = new HashSet<>(listing);
    withoutSelf.remove(self);
    listed = Set.copyOf(listing);
    others = Set.copyOf(withoutSelf);
  }
}
