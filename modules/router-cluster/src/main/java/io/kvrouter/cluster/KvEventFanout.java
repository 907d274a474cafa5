package io.kvrouter.cluster;

import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.selection.SelectionView;
import java.util.List;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * Applies a worker's KV events to the index of every node of the region that serves the model: at once on the node
 * that received them (so the caller's answer counts what was applied), and through a per-region pub-sub topic on
 * the others. Events reach indexes only; the admission actor never sees them.
 */
public final class KvEventFanout {
  /** A batch on its way to the other nodes of the region. */
  public record Published(String origin, String model, String workerId, int dpRank, List<KvEventRecord> events)
      implements CborSerializable {}

  /** What one batch did to the local index. */
  public record Applied(int applied, long gaps) {}

  private final ViewRegistry registry;
  private final Function<String, ModelKvIndex> indexes;
  private final ActorRef<Topic.Command<Published>> topic;
  private final String self;
  private final int blocksPerKvBlock;

  /**
   * @param blocksPerKvBlock how many index blocks a rank may hold per KV block of its registered capacity
   *     ({@code kvrouter.kv-index.blocks-per-kv-block})
   */
  KvEventFanout(ActorSystem<?> system, ViewRegistry registry, Function<String, ModelKvIndex> indexes,
      int blocksPerKvBlock) {
    this.registry = registry;
    this.blocksPerKvBlock = blocksPerKvBlock;
    this.indexes = indexes;
    Cluster cluster = Cluster.get(system);
    this.self = cluster.selfMember().address().toString();
    String region = cluster.selfMember().dataCenter();
    this.topic = system.systemActorOf(Topic.create(Published.class, "kv-events-" + region), "kv-events-topic",
        org.apache.pekko.actor.typed.Props.empty());
    ActorRef<Published> subscriber = system.systemActorOf(subscriber(), "kv-events-subscriber",
        org.apache.pekko.actor.typed.Props.empty());
    topic.tell(Topic.subscribe(subscriber));
  }

  private Behavior<Published> subscriber() {
    return Behaviors.receive(Published.class)
        .onMessage(Published.class, batch -> {
          SelectionView view = registry.view(batch.model());
          WorkerConfig worker = view == null ? null : view.worker(batch.workerId());
          if (!batch.origin().equals(self) && worker != null) {
            applyLocally(batch.model(), worker, batch.dpRank(), batch.events());
          }
          return Behaviors.same();
        })
        .build();
  }

  /**
   * Validates and applies one batch of a (worker, dp_rank). Throws NOT_FOUND for an unknown model or worker and
   * INVALID_ARGUMENT for a rank the worker does not have; nothing is applied then.
   */
  public Applied publish(String model, String workerId, int dpRank, List<KvEventRecord> events) {
    SelectionView view = registry.view(model);
    if (view == null || view.isEmpty()) {
      throw RoutingError.unknownModel(model).toException();
    }
    WorkerConfig worker = view.worker(workerId);
    if (worker == null) {
      throw WorkerConfig.unknownWorker(model, workerId);
    }
    worker.requireRank(dpRank);
    Applied applied = applyLocally(model, worker, dpRank, events);
    topic.tell(Topic.publish(new Published(self, model, workerId, dpRank, events)));
    return applied;
  }

  private Applied applyLocally(String model, WorkerConfig worker, int dpRank, List<KvEventRecord> events) {
    ModelKvIndex index = indexes.apply(model);
    Rank rank = worker.rank(dpRank);
    int maxBlocks = (int) Math.min(Integer.MAX_VALUE, (long) worker.totalKvBlocks() * blocksPerKvBlock);
    long gapsBefore = index.gapCount();
    int applied = 0;
    for (KvEventRecord event : events) {
      if (index.apply(rank, event.eventId(), event.toEvent(), maxBlocks)) {
        applied++;
      }
    }
    return new Applied(applied, index.gapCount() - gapsBefore);
  }
}
