package io.kvrouter.cluster.admission;

import io.kvrouter.cluster.models.ModelSlot;
import io.kvrouter.cluster.replication.ReplicaActor;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.replication.ModelReplica;
import io.kvrouter.core.replication.RecoveredState;
import io.kvrouter.core.selection.KvOverlapSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.StashBuffer;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * How a starting admission actor gets its state: it asks every replica actor of its region, its own node's included,
 * for its copy's stamp {@code (epoch, seq)} (waiting at most {@code recovery-query-timeout}), pulls the freshest copy's
 * snapshot chunks (the next freshest if they do not all arrive in time), and builds the state with
 * {@link AdmissionState#recover}, which takes a newer epoch and starts in recovery mode. With no copy anywhere (a new
 * model, or one that passivated empty) it starts fresh at once. Commands wait in the stash meanwhile.
 */
final class AdmissionRecovery {
  private static final Object TIMER = "recovery";

  private final ActorContext<ModelAdmission.Command> context;
  private final String model;
  private final ModelSlot<ModelAdmission.Command> slot;
  /** Where the replica actors answer (the actor's adapter, which wraps their replies in FromReplica). */
  private final ActorRef<ReplicaActor.Reply> replies;
  private final ModelAdmission.Environment env;
  private final TimerScheduler<ModelAdmission.Command> timers;
  private final StashBuffer<ModelAdmission.Command> stash;
  private final Function<AdmissionState, Behavior<ModelAdmission.Command>> running;

  private AdmissionRecovery(ActorContext<ModelAdmission.Command> context, String model,
      ModelSlot<ModelAdmission.Command> slot, ActorRef<ReplicaActor.Reply> replies, ModelAdmission.Environment env,
      TimerScheduler<ModelAdmission.Command> timers, StashBuffer<ModelAdmission.Command> stash,
      Function<AdmissionState, Behavior<ModelAdmission.Command>> running) {
    this.context = context;
    this.model = model;
    this.slot = slot;
    this.replies = replies;
    this.env = env;
    this.timers = timers;
    this.stash = stash;
    this.running = running;
  }

  /** @param running builds the running actor around its state */
  static Behavior<ModelAdmission.Command> start(ActorContext<ModelAdmission.Command> context, String model,
      ModelSlot<ModelAdmission.Command> slot, ActorRef<ReplicaActor.Reply> replies, ModelAdmission.Environment env,
      TimerScheduler<ModelAdmission.Command> timers, StashBuffer<ModelAdmission.Command> stash,
      Function<AdmissionState, Behavior<ModelAdmission.Command>> running) {
    AdmissionRecovery recovery = new AdmissionRecovery(context, model, slot, replies, env, timers, stash, running);
    if (!env.replication().enabled()) {
      return running.apply(recovery.fresh());
    }
    return recovery.awaitingStamps(recovery.queryStamps(), new HashMap<>());
  }

  /** Asks every replica actor of the region (this node's included) for its copy's stamp; returns how many. */
  private int queryStamps() {
    Set<ActorRef<ReplicaActor.Command>> asked = env.replicas().all();
    asked.forEach(peer -> peer.tell(new ReplicaActor.QueryStamp(model, replies)));
    timers.startSingleTimer(TIMER, ModelAdmission.RecoveryTimeout.INSTANCE,
        env.replication().recoveryQueryTimeout());
    return asked.size();
  }

  /**
   * Copies to hear from before picking one: a majority of the region's nodes when answers wait for the majority (one
   * of any majority holds every answered change), else whoever answers in time.
   */
  private int quorum() {
    return env.replication().copiesToHearFrom(env.regionMembers().getAsInt());
  }

  private AdmissionState fresh() {
    return new AdmissionState(model, env.settings(), env.clock(), slot.kvIndex(), slot::publish, 0,
        env.clock().millis());
  }

  private Behavior<ModelAdmission.Command> awaitingStamps(int asked,
      Map<ActorRef<ReplicaActor.Command>, ReplicaActor.Stamp> stamps) {
    return waiting(command -> {
      if (command instanceof ModelAdmission.FromReplica from && from.reply() instanceof ReplicaActor.Stamp stamp) {
        stamps.put(stamp.peer(), stamp);
        return stamps.size() >= Math.max(asked, quorum()) ? pullFreshest(stamps) : null;
      }
      if (command == ModelAdmission.RecoveryTimeout.INSTANCE) {
        int quorum = quorum();
        if (stamps.size() < quorum) {
          context.getLog().warn("model '{}': {} of the {} copies recovery needs answered in time; asking again",
              model, stamps.size(), quorum);
          return awaitingStamps(queryStamps(), stamps);
        }
        if (stamps.size() < asked) {
          context.getLog().info("model '{}': {} of {} replica nodes answered the recovery query in time", model,
              stamps.size(), asked);
        }
        return pullFreshest(stamps);
      }
      return null;
    });
  }

  private Behavior<ModelAdmission.Command> pullFreshest(
      Map<ActorRef<ReplicaActor.Command>, ReplicaActor.Stamp> stamps) {
    List<ReplicaActor.Stamp> held = new ArrayList<>(stamps.values().stream()
        .filter(ReplicaActor.Stamp::held).toList());
    held.sort(Comparator.comparingLong(ReplicaActor.Stamp::epoch)
        .thenComparingLong(ReplicaActor.Stamp::seq).reversed());
    return pull(held);
  }

  /** Pulls the first candidate's copy; if its chunks do not all arrive in time, the next one's. */
  private Behavior<ModelAdmission.Command> pull(List<ReplicaActor.Stamp> candidates) {
    if (candidates.isEmpty()) {
      return finish(fresh());
    }
    ReplicaActor.Stamp candidate = candidates.get(0);
    candidate.peer().tell(new ReplicaActor.PullSnapshot(model, replies));
    timers.startSingleTimer(TIMER, ModelAdmission.RecoveryTimeout.INSTANCE,
        env.replication().recoveryQueryTimeout());
    // the chunks are assembled in a replica of their own, which feeds nothing
    ModelReplica copy = new ModelReplica(model, env.settings().heartbeatTimeout().toMillis(), KvOverlapSource.NONE,
        view -> { });
    return waiting(command -> {
      if (command instanceof ModelAdmission.FromReplica from
          && from.reply() instanceof ReplicaActor.RecoveryChunk received
          && copy.apply(received.chunk(), env.clock().millis()) == ModelReplica.Outcome.APPLIED) {
        RecoveredState recovered = copy.recoveredState();
        return finish(recovered == null ? fresh() : AdmissionState.recover(model, env.settings(), env.clock(),
            slot.kvIndex(), slot::publish, recovered, env.replication().recoveryWindow()));
      }
      if (command == ModelAdmission.RecoveryTimeout.INSTANCE) {
        context.getLog().warn("model '{}': the copy of {} did not arrive in time", model, candidate.peer());
        return pull(candidates.subList(1, candidates.size()));
      }
      return null;
    });
  }

  private Behavior<ModelAdmission.Command> finish(AdmissionState state) {
    timers.cancel(TIMER);
    if (state.recovering()) {
      context.getLog().info("model '{}' recovered: epoch {}, {} booking(s)", model, state.epoch(),
          state.ledgerSnapshot().bookings().size());
    }
    return stash.unstashAll(running.apply(state));
  }

  /**
   * While recovering: {@code step} handles recovery's own messages (null: keep waiting); a Stop stops the actor,
   * messages meant for a running actor are dropped, and every other command waits in the stash.
   */
  private Behavior<ModelAdmission.Command> waiting(
      Function<ModelAdmission.Command, Behavior<ModelAdmission.Command>> step) {
    return Behaviors.receive(ModelAdmission.Command.class)
        .onMessage(ModelAdmission.Command.class, command -> {
          Behavior<ModelAdmission.Command> next = step.apply(command);
          if (next != null) {
            return next;
          }
          if (command == ModelAdmission.Stop.INSTANCE) {
            return Behaviors.stopped();
          }
          if (command instanceof ModelAdmission.FromReplica || command == ModelAdmission.RecoveryTimeout.INSTANCE
              || command == ModelAdmission.Wake.INSTANCE || command == ModelAdmission.Flush.INSTANCE
              || command == ModelAdmission.ExpireLeases.INSTANCE) {
            return Behaviors.same();
          }
          if (stash.isFull()) {
            context.getLog().warn("model '{}': {} commands wait for recovery, dropping {}", model,
                ModelAdmission.STASH_CAPACITY, command.getClass().getSimpleName());
          } else {
            stash.stash(command);
          }
          return Behaviors.same();
        })
        .build();
  }
}
