package io.kvrouter.cluster.replication;

import io.kvrouter.cluster.models.ModelSlot;
import io.kvrouter.cluster.models.ModelSlots;
import io.kvrouter.cluster.serialization.CborSerializable;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.replication.ModelReplica;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.replication.Staleness;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * One per node: this node's replica of every model of its region whose admission actor runs elsewhere (a
 * {@link ModelReplica} in the model's {@link ModelSlot}), fed by the owner's deltas and snapshot chunks, each
 * acknowledged. It publishes the replicas' views into the slots (newer only), answers recovering admission actors
 * (stamp, then snapshot), forgets a model once its replica has no worker, and wakes the region's models when a member
 * of the region is removed, so sharding restarts their actors at once.
 *
 * <p>Its protocol knows nothing of the admission actor: owners and recovering actors give it an
 * {@code ActorRef<Reply>} to answer to.
 */
public final class ReplicaActor extends AbstractBehavior<ReplicaActor.Command> {

  /** The replica actors of one region register under this key. */
  public static ServiceKey<Command> serviceKey(String region) {
    return ServiceKey.create(Command.class, "kvrouter-replicas-" + region);
  }

  public sealed interface Command extends CborSerializable {}

  /** What the owner changed; acknowledged with its seq, or answered with {@link SnapshotWanted} on a gap. */
  public record Delta(ReplicaDelta delta, ActorRef<Reply> owner) implements Command {}

  /** One chunk of the owner's full copy; the last chunk of a copy is acknowledged. */
  public record Chunk(SnapshotChunk chunk, ActorRef<Reply> owner) implements Command {}

  /** A view a Register/Deregister/SetPolicy reply carried (applied if newer), answered once applied. */
  public record AdoptView(ViewState view, ActorRef<Done> replyTo) implements Command {}

  /** A recovering admission actor asks how fresh this node's copy is. */
  public record QueryStamp(String model, ActorRef<Reply> replyTo) implements Command {}

  /** A recovering admission actor takes this node's copy (chunks, as a snapshot). */
  public record PullSnapshot(String model, ActorRef<Reply> replyTo) implements Command {}

  public record GetStaleness(String model, ActorRef<StalenessReply> replyTo) implements Command {}

  /** This node's staleness of a model; null when it keeps no replica of it. */
  public record StalenessReply(Staleness staleness) implements CborSerializable {}

  /** What a replica actor answers an owner (acks, gaps) or a recovering admission actor (stamps, chunks). */
  public sealed interface Reply extends CborSerializable {}

  /** A peer applied everything up to {@code seq} of {@code epoch}. */
  public record Acked(ActorRef<Command> peer, long epoch, long seq) implements Reply {}

  /** A peer missed a delta (or has not got this epoch's snapshot): it needs a full snapshot. */
  public record SnapshotWanted(ActorRef<Command> peer, long epoch) implements Reply {}

  /** How fresh a peer's copy is ({@code held} false: it has none). */
  public record Stamp(ActorRef<Command> peer, long epoch, long seq, boolean held) implements Reply {}

  /** One chunk of the copy a recovering actor pulled. */
  public record RecoveryChunk(SnapshotChunk chunk) implements Reply {}

  /** Sent by the actor's timer: the approximate KV indexes fed by replicas drop entries past their time to live. */
  enum ExpireIndexes implements Command {
    INSTANCE
  }

  private record Listed(Receptionist.Listing listing) implements Command {}

  private record MemberGone(ClusterEvent.MemberRemoved removed) implements Command {}

  /** Sent by the actor's timer: wakes the models again, {@code round} (1, 2, ...) rounds after a member left. */
  record WakeAgain(int round) implements Command {}

  /** Rounds of Wakes after a member left, 1, 2, 4 and 8 s apart. */
  private static final int WAKE_ROUNDS = 4;
  private static final Object WAKE_TIMER = "wake";

  /**
   * What the node gives its replica actor. {@code wake} sends a no-op to a model's admission actor through sharding,
   * which restarts it on a survivor.
   */
  public record Environment(String region, Clock clock, Duration expiryInterval, long heartbeatTimeoutMillis,
      int maxChunkBytes, ModelSlots<?> slots, ReplicaListing listing, Consumer<String> wake) {}

  private final Environment env;
  private final TimerScheduler<Command> timers;

  public static Behavior<Command> create(Environment env) {
    return Behaviors.setup(ctx -> {
      ctx.getSystem().receptionist().tell(Receptionist.register(serviceKey(env.region()), ctx.getSelf()));
      ctx.getSystem().receptionist().tell(Receptionist.subscribe(serviceKey(env.region()),
          ctx.messageAdapter(Receptionist.Listing.class, Listed::new)));
      Cluster.get(ctx.getSystem()).subscriptions().tell(Subscribe.create(
          ctx.messageAdapter(ClusterEvent.MemberRemoved.class, MemberGone::new), ClusterEvent.MemberRemoved.class));
      return Behaviors.<Command>withTimers(timers -> {
        timers.startTimerWithFixedDelay(ExpireIndexes.INSTANCE, env.expiryInterval());
        return new ReplicaActor(ctx, env, timers);
      });
    });
  }

  private ReplicaActor(ActorContext<Command> context, Environment env, TimerScheduler<Command> timers) {
    super(context);
    this.env = env;
    this.timers = timers;
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder()
        .onMessage(Delta.class, this::onDelta)
        .onMessage(Chunk.class, this::onChunk)
        .onMessage(AdoptView.class, this::onAdoptView)
        .onMessage(QueryStamp.class, this::onQueryStamp)
        .onMessage(PullSnapshot.class, this::onPullSnapshot)
        .onMessage(GetStaleness.class, this::onGetStaleness)
        .onMessageEquals(ExpireIndexes.INSTANCE, () -> {
          long now = env.clock().millis();
          for (ModelSlot<?> slot : env.slots().all()) {
            if (slot.replica() != null) {
              slot.replica().expire(now);
            }
          }
          return this;
        })
        .onMessage(Listed.class, this::onListed)
        .onMessage(MemberGone.class, this::onMemberGone)
        .onMessage(WakeAgain.class, this::onWakeAgain)
        .build();
  }

  /** The model's slot, opened if need be, with its replica. */
  private ModelSlot<?> slotWithReplica(String model) {
    ModelSlot<?> slot = env.slots().open(model);
    if (slot.replica() == null) {
      slot.setReplica(new ModelReplica(model, env.heartbeatTimeoutMillis(), slot.kvIndex(), slot::publish));
    }
    return slot;
  }

  /** The model's replica, or null when this node keeps none. */
  private ModelReplica replica(String model) {
    ModelSlot<?> slot = env.slots().find(model);
    return slot == null ? null : slot.replica();
  }

  private Behavior<Command> onDelta(Delta m) {
    ReplicaDelta delta = m.delta();
    ModelSlot<?> slot = slotWithReplica(delta.model());
    ModelReplica replica = slot.replica();
    switch (replica.apply(delta, env.clock().millis())) {
      case APPLIED -> {
        m.owner().tell(new Acked(getContext().getSelf(), delta.epoch(), delta.seq()));
        forgetIfEmpty(slot);
      }
      case GAP -> m.owner().tell(new SnapshotWanted(getContext().getSelf(), delta.epoch()));
      case STALE -> {
        if (replica.epoch() == delta.epoch()) {
          // a duplicate: acknowledge what this copy holds
          m.owner().tell(new Acked(getContext().getSelf(), replica.epoch(), replica.seq()));
        }
      }
      case PARTIAL -> { }
    }
    return this;
  }

  private Behavior<Command> onChunk(Chunk m) {
    SnapshotChunk chunk = m.chunk();
    ModelSlot<?> slot = slotWithReplica(chunk.model());
    if (slot.replica().apply(chunk, env.clock().millis()) == ModelReplica.Outcome.APPLIED) {
      m.owner().tell(new Acked(getContext().getSelf(), chunk.epoch(), chunk.seq()));
      forgetIfEmpty(slot);
    }
    return this;
  }

  private Behavior<Command> onAdoptView(AdoptView m) {
    ModelSlot<?> slot = slotWithReplica(m.view().model());
    slot.replica().applyView(m.view(), env.clock().millis());
    forgetIfEmpty(slot);
    m.replyTo().tell(Done.getInstance());
    return this;
  }

  /**
   * A replica with no worker makes the node forget the model (its slot), as a passivation does on the owner's node;
   * the owner's own node keeps what its actor publishes.
   */
  private void forgetIfEmpty(ModelSlot<?> slot) {
    if (!slot.replica().isEmpty()) {
      return;
    }
    slot.setReplica(null);
    if (!slot.hostsAdmission()) {
      env.slots().close(slot.model(), slot);
    }
  }

  private Behavior<Command> onQueryStamp(QueryStamp m) {
    ModelReplica replica = replica(m.model());
    boolean held = replica != null && !replica.isEmpty();
    m.replyTo().tell(new Stamp(getContext().getSelf(), held ? replica.epoch() : 0, held ? replica.seq() : 0, held));
    return this;
  }

  private Behavior<Command> onPullSnapshot(PullSnapshot m) {
    ModelReplica replica = replica(m.model());
    if (replica != null && !replica.isEmpty()) {
      List<SnapshotChunk> chunks = replica.snapshot(env.clock().millis(), env.maxChunkBytes());
      chunks.forEach(chunk -> m.replyTo().tell(new RecoveryChunk(chunk)));
    }
    return this;
  }

  private Behavior<Command> onGetStaleness(GetStaleness m) {
    ModelReplica replica = replica(m.model());
    m.replyTo().tell(new StalenessReply(replica == null ? null : replica.staleness(env.clock().millis())));
    return this;
  }

  private Behavior<Command> onListed(Listed m) {
    env.listing().listed(m.listing().getServiceInstances(serviceKey(env.region())));
    return this;
  }

  /**
   * A member of this region left or died: the actors it hosted are restarted elsewhere only on a message, so wake
   * every model this node holds a copy of (a model hosted on a surviving node ignores the Wake). A shard region may
   * still route a Wake to the dead member's region until it has processed the removal itself, so the Wakes are sent
   * again in a few rounds, 1, 2, 4 and 8 s later.
   */
  private Behavior<Command> onMemberGone(MemberGone m) {
    if (!m.removed().member().dataCenter().equals(env.region())) {
      return this;
    }
    wakeModels();
    timers.startSingleTimer(WAKE_TIMER, new WakeAgain(1), Duration.ofSeconds(1));
    return this;
  }

  private Behavior<Command> onWakeAgain(WakeAgain m) {
    wakeModels();
    if (m.round() < WAKE_ROUNDS) {
      timers.startSingleTimer(WAKE_TIMER, new WakeAgain(m.round() + 1), Duration.ofSeconds(1L << m.round()));
    }
    return this;
  }

  private void wakeModels() {
    for (ModelSlot<?> slot : env.slots().all()) {
      if (slot.replica() != null && !slot.replica().isEmpty()) {
        env.wake().accept(slot.model());
      }
    }
  }
}
