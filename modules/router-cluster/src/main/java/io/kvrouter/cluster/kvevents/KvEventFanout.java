package io.kvrouter.cluster.kvevents;

import com.typesafe.config.Config;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.indexer.KvEventSequencer;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.SelectionView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.typed.Cluster;
import io.kvrouter.cluster.models.ModelSlot;
import io.kvrouter.cluster.models.ModelSlots;
import io.kvrouter.cluster.serialization.CborSerializable;

/**
 * Applies a worker's KV events to the index of every node of the region that serves the model: at once on the node
 * that received them (so the caller's answer counts what was applied), and through a per-region pub-sub topic on
 * the others. Events reach indexes only; the admission actor never sees them.
 *
 * <p>Every node puts each (worker, rank)'s events back in event-id order with its own {@link KvEventSequencer} per
 * model, so an engine's batches may arrive through different nodes: an early batch waits up to
 * {@code kvrouter.kv-index.reorder-window} for the ids before it (at most {@code reorder-max-held} events per rank),
 * and only then are the missing ids a gap, which every node declares for itself and which clears the rank. The
 * subscriber actor's timer ages held events.
 */
public final class KvEventFanout {
  /** The subscriber's messages: batches from the region's other nodes, and the tick that ages held events. */
  sealed interface Command extends CborSerializable {}

  /** A batch on its way to the other nodes of the region. */
  public record Published(String origin, String model, String workerId, int dpRank, List<KvEventRecord> events)
      implements Command {}

  /** Time to declare gaps for events held for the window. */
  enum Tick implements Command {
    INSTANCE
  }

  /**
   * What one batch did to the local index.
   *
   * @param applied events of the batch applied at once
   * @param held events of the batch accepted but waiting for lower ids (applied when they arrive, or after the
   *     reorder window as a gap)
   * @param gaps gaps declared while applying the batch (the per-rank hold bound was hit), each clearing the rank
   */
  public record Applied(int applied, int held, long gaps) {}

  private final ModelSlots<?> slots;
  private final ActorRef<Topic.Command<Published>> topic;
  private final String self;
  private final int blocksPerKvBlock;

  /**
   * @param blocksPerKvBlock how many index blocks a rank may hold per KV block of its registered capacity
   *     ({@code kvrouter.kv-index.blocks-per-kv-block})
   * @param tick how often held events are aged ({@link #tickInterval})
   */
  public KvEventFanout(ActorSystem<?> system, ModelSlots<?> slots, int blocksPerKvBlock, Duration tick) {
    this.slots = slots;
    this.blocksPerKvBlock = blocksPerKvBlock;
    Cluster cluster = Cluster.get(system);
    this.self = cluster.selfMember().address().toString();
    String region = cluster.selfMember().dataCenter();
    this.topic = system.systemActorOf(Topic.create(Published.class, topicName(region)), "kv-events-topic",
        Props.empty());
    ActorRef<Command> subscriber = system.systemActorOf(subscriber(tick), "kv-events-subscriber",
        Props.empty());
    topic.tell(Topic.subscribe(subscriber.narrow()));
  }

  /** The region's KV event topic: pub-sub topics are cluster-wide, so the name scopes it to one region. */
  public static String topicName(String region) {
    return "kv-events-" + region;
  }

  /** {@code kvrouter.kv-index.reorder-window} and {@code reorder-max-held}. */
  public static KvEventSequencer.Settings reorderSettings(Config config) {
    return new KvEventSequencer.Settings(config.getDuration("kvrouter.kv-index.reorder-window").toMillis(),
        config.getInt("kvrouter.kv-index.reorder-max-held"));
  }

  /** A quarter of the window (at least 1 ms): a held event waits at most the window and one tick. */
  public static Duration tickInterval(KvEventSequencer.Settings settings) {
    return Duration.ofMillis(Math.max(1, settings.windowMillis() / 4));
  }

  private Behavior<Command> subscriber(Duration tick) {
    return Behaviors.withTimers(timers -> {
      timers.startTimerWithFixedDelay(Tick.INSTANCE, tick);
      return Behaviors.receive(Command.class)
          .onMessage(Published.class, batch -> {
            ModelSlot<?> slot = slots.find(batch.model());
            SelectionView view = slot == null ? null : slot.view();
            WorkerConfig worker = view == null ? null : view.worker(batch.workerId());
            if (!batch.origin().equals(self) && worker != null) {
              applyLocally(slot, worker, batch.dpRank(), batch.events());
            }
            return Behaviors.same();
          })
          .onMessageEquals(Tick.INSTANCE, () -> {
            expireHeld();
            return Behaviors.same();
          })
          .build();
    });
  }

  /**
   * Validates and applies one batch of a (worker, dp_rank). Throws NOT_FOUND for an unknown model or worker and
   * INVALID_ARGUMENT for a rank the worker does not have; nothing is applied then.
   */
  public Applied publish(String model, String workerId, int dpRank, List<KvEventRecord> events) {
    ModelSlot<?> slot = slots.find(model);
    SelectionView view = slot == null ? null : slot.view();
    if (view == null || view.isEmpty()) {
      throw RoutingError.unknownModel(model).toException();
    }
    WorkerConfig worker = view.worker(workerId);
    if (worker == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    worker.requireRank(dpRank);
    Applied applied = applyLocally(slot, worker, dpRank, events);
    topic.tell(Topic.publish(new Published(self, model, workerId, dpRank, events)));
    return applied;
  }

  /** What this node's sequencer of the model holds and declared (zeros when it has none). */
  public KvEventSequencer.Counters reorderCounters(String model) {
    ModelSlot<?> slot = slots.find(model);
    return slot == null ? KvEventSequencer.Counters.NONE : slot.sequencer().counters();
  }

  private Applied applyLocally(ModelSlot<?> slot, WorkerConfig worker, int dpRank, List<KvEventRecord> events) {
    int maxBlocks = (int) Math.min(Integer.MAX_VALUE, (long) worker.totalKvBlocks() * blocksPerKvBlock);
    List<KvEventSequencer.Sequenced> sequenced = new ArrayList<>(events.size());
    for (KvEventRecord event : events) {
      sequenced.add(new KvEventSequencer.Sequenced(event.eventId(), event.toEvent()));
    }
    KvEventSequencer.Outcome outcome = slot.sequencer().offer(worker.rank(dpRank), maxBlocks, sequenced);
    return new Applied(outcome.applied(), outcome.held(), outcome.gaps());
  }

  /**
   * Declares gaps for events held for the window; drops what is held for workers (or models) this node no longer
   * has in its view.
   */
  private void expireHeld() {
    for (ModelSlot<?> slot : slots.all()) {
      SelectionView view = slot.view();
      KvEventSequencer sequencer = slot.sequencer();
      if (view != null) {
        sequencer.retainWorkers(workerId -> view.worker(workerId) != null);
      }
      sequencer.expire();
    }
  }
}
