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

  KvEventFanout(ActorSystem<?> system, ViewRegistry registry, Function<String, ModelKvIndex> indexes) {
    this.registry = registry;
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
          if (!batch.origin().equals(self) && registry.view(batch.model()) != null) {
            applyLocally(batch.model(), new Rank(batch.workerId(), batch.dpRank()), batch.events());
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
    Applied applied = applyLocally(model, worker.rank(dpRank), events);
    topic.tell(Topic.publish(new Published(self, model, workerId, dpRank, events)));
    return applied;
  }

  private Applied applyLocally(String model, Rank rank, List<KvEventRecord> events) {
    ModelKvIndex index = indexes.apply(model);
    long gapsBefore = index.gapCount();
    int applied = 0;
    for (KvEventRecord event : events) {
      if (index.apply(rank, event.eventId(), event.toEvent())) {
        applied++;
      }
    }
    return new Applied(applied, index.gapCount() - gapsBefore);
  }
}
