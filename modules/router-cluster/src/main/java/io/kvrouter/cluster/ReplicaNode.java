package io.kvrouter.cluster;

import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.replication.ModelReplica;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.replication.Staleness;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.selection.KvOverlapSource;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
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
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * One per node: this node's replica of every model of its region whose admission actor runs elsewhere (a
 * {@link ModelReplica} each), fed by the owner's deltas and snapshot chunks, each acknowledged. It publishes the
 * replicas' views into the node's {@link ViewRegistry} (newer only), answers recovering admission actors (stamp, then
 * snapshot), forgets a model once its replica has no worker, and wakes the region's models when a member of the
 * region is removed, so sharding restarts their actors at once.
 */
public final class ReplicaNode extends AbstractBehavior<ReplicaNode.Command> {

  /** The replica actors of one region register under this key. */
  public static ServiceKey<Command> serviceKey(String region) {
    return ServiceKey.create(Command.class, "kvrouter-replicas-" + region);
  }

  public sealed interface Command extends CborSerializable {}

  /** What the owner changed; acknowledged with its seq, or answered with {@code SnapshotWanted} on a gap. */
  public record Delta(ReplicaDelta delta, ActorRef<ModelAdmission.Command> owner) implements Command {}

  /** One chunk of the owner's full copy; the last chunk of a copy is acknowledged. */
  public record Chunk(SnapshotChunk chunk, ActorRef<ModelAdmission.Command> owner) implements Command {}

  /** A view a Register/Deregister/SetPolicy reply carried (applied if newer), answered once applied. */
  public record AdoptView(ViewState view, ActorRef<Done> replyTo) implements Command {}

  /** A recovering admission actor asks how fresh this node's copy is. */
  public record QueryStamp(String model, ActorRef<ModelAdmission.Command> replyTo) implements Command {}

  /** A recovering admission actor takes this node's copy (chunks, as a snapshot). */
  public record PullSnapshot(String model, ActorRef<ModelAdmission.Command> replyTo) implements Command {}

  public record GetStaleness(String model, ActorRef<StalenessReply> replyTo) implements Command {}

  /** This node's staleness of a model; null when it keeps no replica of it. */
  public record StalenessReply(Staleness staleness) implements CborSerializable {}

  /** The model's actor passivated on this node: whatever copy this node kept is stale. */
  public record Forget(String model) implements Command {}

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
   * What the node gives its replica actor. {@code hostedHere} tells whether the model's admission actor runs on this
   * node (its views come from the actor then); {@code forget} drops what the node keeps for a model.
   */
  record Environment(String region, Clock clock, Duration expiryInterval, long heartbeatTimeoutMillis,
      int maxChunkBytes,
      ViewRegistry registry, Function<String, KvOverlapSource> kvIndex, Predicate<String> hostedHere,
      Consumer<String> forget, ReplicaPeers peers) {}

  private final Environment env;
  private final Map<String, ModelReplica> replicas = new HashMap<>();
  private final TimerScheduler<Command> timers;

  static Behavior<Command> create(Environment env) {
    return Behaviors.setup(ctx -> {
      ctx.getSystem().receptionist().tell(Receptionist.register(serviceKey(env.region()), ctx.getSelf()));
      ctx.getSystem().receptionist().tell(Receptionist.subscribe(serviceKey(env.region()),
          ctx.messageAdapter(Receptionist.Listing.class, Listed::new)));
      Cluster.get(ctx.getSystem()).subscriptions().tell(Subscribe.create(
          ctx.messageAdapter(ClusterEvent.MemberRemoved.class, MemberGone::new), ClusterEvent.MemberRemoved.class));
      return Behaviors.<Command>withTimers(timers -> {
        timers.startTimerWithFixedDelay(ExpireIndexes.INSTANCE, env.expiryInterval());
        return new ReplicaNode(ctx, env, timers);
      });
    });
  }

  private ReplicaNode(ActorContext<Command> context, Environment env, TimerScheduler<Command> timers) {
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
        .onMessage(Forget.class, m -> {
          replicas.remove(m.model());
          return this;
        })
        .onMessageEquals(ExpireIndexes.INSTANCE, () -> {
          long now = env.clock().millis();
          replicas.values().forEach(replica -> replica.expire(now));
          return this;
        })
        .onMessage(Listed.class, this::onListed)
        .onMessage(MemberGone.class, this::onMemberGone)
        .onMessage(WakeAgain.class, this::onWakeAgain)
        .build();
  }

  private ModelReplica replica(String model) {
    return replicas.computeIfAbsent(model, m -> new ModelReplica(m, env.heartbeatTimeoutMillis(),
        env.kvIndex().apply(m), env.registry()::publish));
  }

  private Behavior<Command> onDelta(Delta m) {
    ReplicaDelta delta = m.delta();
    ModelReplica replica = replica(delta.model());
    switch (replica.apply(delta, env.clock().millis())) {
      case APPLIED -> {
        m.owner().tell(new ModelAdmission.ReplicaAck(getContext().getSelf(), delta.epoch(), delta.seq()));
        forgetIfEmpty(delta.model(), replica);
      }
      case GAP -> m.owner().tell(new ModelAdmission.SnapshotWanted(getContext().getSelf(), delta.epoch()));
      case STALE -> {
        if (replica.epoch() == delta.epoch()) {
          // a duplicate: acknowledge what this copy holds
          m.owner().tell(new ModelAdmission.ReplicaAck(getContext().getSelf(), replica.epoch(), replica.seq()));
        }
      }
      case PARTIAL -> { }
    }
    return this;
  }

  private Behavior<Command> onChunk(Chunk m) {
    SnapshotChunk chunk = m.chunk();
    ModelReplica replica = replica(chunk.model());
    if (replica.apply(chunk, env.clock().millis()) == ModelReplica.Outcome.APPLIED) {
      m.owner().tell(new ModelAdmission.ReplicaAck(getContext().getSelf(), chunk.epoch(), chunk.seq()));
      forgetIfEmpty(chunk.model(), replica);
    }
    return this;
  }

  private Behavior<Command> onAdoptView(AdoptView m) {
    ModelReplica replica = replica(m.view().model());
    replica.applyView(m.view(), env.clock().millis());
    forgetIfEmpty(m.view().model(), replica);
    m.replyTo().tell(Done.getInstance());
    return this;
  }

  /**
   * A replica with no worker makes the node forget the model (its view, facade and KV index), as a passivation does
   * on the owner's node; the owner's own node keeps what its actor publishes.
   */
  private void forgetIfEmpty(String model, ModelReplica replica) {
    if (!replica.isEmpty()) {
      return;
    }
    replicas.remove(model);
    if (!env.hostedHere().test(model)) {
      env.forget().accept(model);
    }
  }

  private Behavior<Command> onQueryStamp(QueryStamp m) {
    ModelReplica replica = replicas.get(m.model());
    boolean held = replica != null && !replica.isEmpty();
    m.replyTo().tell(new ModelAdmission.ReplicaStamp(getContext().getSelf(),
        held ? replica.epoch() : 0, held ? replica.seq() : 0, held));
    return this;
  }

  private Behavior<Command> onPullSnapshot(PullSnapshot m) {
    ModelReplica replica = replicas.get(m.model());
    if (replica != null && !replica.isEmpty()) {
      List<SnapshotChunk> chunks = replica.snapshot(env.clock().millis(), env.maxChunkBytes());
      chunks.forEach(chunk -> m.replyTo().tell(new ModelAdmission.RecoveryChunk(chunk)));
    }
    return this;
  }

  private Behavior<Command> onGetStaleness(GetStaleness m) {
    ModelReplica replica = replicas.get(m.model());
    m.replyTo().tell(new StalenessReply(replica == null ? null : replica.staleness(env.clock().millis())));
    return this;
  }

  private Behavior<Command> onListed(Listed m) {
    env.peers().listed(m.listing().getServiceInstances(serviceKey(env.region())));
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
    ClusterSharding sharding = ClusterSharding.get(getContext().getSystem());
    replicas.forEach((model, replica) -> {
      if (!replica.isEmpty()) {
        sharding.entityRefFor(ModelAdmission.ENTITY_KEY, model).tell(ModelAdmission.Wake.INSTANCE);
      }
    });
  }
}
