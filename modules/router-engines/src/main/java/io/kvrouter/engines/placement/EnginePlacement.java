package io.kvrouter.engines.placement;

import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.config.EnginesSettings;
import io.kvrouter.engines.connector.EngineConnector;
import io.kvrouter.engines.connector.EngineSink;
import io.kvrouter.engines.discovery.EngineSources;
import io.kvrouter.engines.discovery.SourcedSpec;
import io.kvrouter.engines.metrics.Scraper;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * A node's part of the engine placement: the engine entity type on Cluster Sharding (every node can run connectors,
 * whether or not it has sources of its own), the node's ensurer (every ensure interval, and at once when its sources
 * change, an {@link EngineEntity.Ensure} for each engine its sources list and a {@link EngineEntity.Retire} for each
 * they no longer list), the region's status topic and this node's {@link StatusBoard}.
 */
public final class EnginePlacement {
  /** The dispatcher the engine entities run on: stopping a connector waits for its thread. */
  public static final String DISPATCHER = "kvrouter.engines.dispatcher";

  private final ActorSystem<?> system;
  private final EnginesSettings settings;
  private final EngineSink sink;
  private final EngineSources sources;
  private final Scraper scraper;
  private final StatusBoard board;
  private final LongSupplier clock;
  private final String selfAddress;
  private final EngineConnector.BatchListener batchListener;
  private final Map<EngineKey, EngineConnector> local = new ConcurrentHashMap<>();
  private final CopyOnWriteArrayList<BiConsumer<EngineKey, EngineConnector>> onStart = new CopyOnWriteArrayList<>();
  private final CopyOnWriteArrayList<BiConsumer<EngineKey, EngineConnector>> onStop = new CopyOnWriteArrayList<>();
  private ActorRef<Topic.Command<StatusUpdate>> topic;
  private ClusterSharding sharding;

  /** The ensurer's tick (local only; serializable like every message, for serialize-messages = on). */
  enum EnsureTick implements EngineMessage {
    INSTANCE
  }

  private EnginePlacement(ActorSystem<?> system, EnginesSettings settings, EngineSink sink, EngineSources sources,
      Scraper scraper, LongSupplier clock, EngineConnector.BatchListener batchListener) {
    this.system = system;
    this.settings = settings;
    this.sink = sink;
    this.sources = sources;
    this.scraper = scraper;
    this.clock = clock;
    this.batchListener = batchListener;
    this.board = new StatusBoard(clock, settings.statusInterval().multipliedBy(3).toMillis());
    this.selfAddress = Cluster.get(system).selfMember().address().toString();
  }

  /** Starts the node's placement: the entity type, the status topic and board, the ensurer of its sources. */
  public static EnginePlacement start(ActorSystem<?> system, EnginesSettings settings, EngineSink sink,
      EngineSources sources, Scraper scraper, LongSupplier clock, EngineConnector.BatchListener batchListener) {
    EnginePlacement placement = new EnginePlacement(system, settings, sink, sources, scraper, clock, batchListener);
    placement.init();
    return placement;
  }

  private void init() {
    String region = Cluster.get(system).selfMember().dataCenter();
    topic = system.systemActorOf(Topic.create(StatusUpdate.class, "kvrouter-engines-" + region),
        "kvrouter-engines-status-topic", Props.empty());
    ActorRef<StatusUpdate> listener = system.systemActorOf(Behaviors.receive(StatusUpdate.class)
        .onMessage(StatusUpdate.Published.class, published -> {
          board.published(published.status());
          return Behaviors.same();
        })
        .onMessage(StatusUpdate.Retired.class, retired -> {
          board.retired(retired.model(), retired.workerId(), retired.incarnation());
          return Behaviors.same();
        })
        .build(), "kvrouter-engines-status", Props.empty());
    topic.tell(Topic.subscribe(listener));
    sharding = ClusterSharding.get(system);
    sharding.init(Entity.of(EngineEntity.TYPE, ctx -> EngineEntity.create(ctx.getEntityId(), ctx.getShard(), this))
        .withSettings(ClusterShardingSettings.create(system).withNoPassivationStrategy())
        .withStopMessage(EngineEntity.Stop.INSTANCE)
        .withEntityProps(DispatcherSelector.fromConfig(DISPATCHER)));
    system.systemActorOf(ensurer(), "kvrouter-engines-ensurer", Props.empty());
  }

  private Behavior<EnsureTick> ensurer() {
    return Behaviors.setup(context -> Behaviors.withTimers(timers -> {
      timers.startTimerWithFixedDelay(EnsureTick.INSTANCE, Duration.ZERO, settings.ensureInterval());
      ActorRef<EnsureTick> self = context.getSelf();
      sources.listen(() -> self.tell(EnsureTick.INSTANCE));
      Set<EngineKey> listed = new HashSet<>();
      return Behaviors.receive(EnsureTick.class).onMessageEquals(EnsureTick.INSTANCE, () -> {
        Map<EngineKey, SourcedSpec> engines = sources.engines();
        for (EngineKey gone : listed) {
          if (!engines.containsKey(gone)) {
            sharding.entityRefFor(EngineEntity.TYPE, gone.entityId()).tell(new EngineEntity.Retire(selfAddress));
          }
        }
        listed.clear();
        engines.forEach((key, spec) -> {
          listed.add(key);
          sharding.entityRefFor(EngineEntity.TYPE, key.entityId())
              .tell(new EngineEntity.Ensure(spec.spec(), spec.origin(), selfAddress));
        });
        return Behaviors.same();
      }).build();
    }));
  }

  void publish(StatusUpdate update) {
    // this node's board learns at once (the topic also delivers to it, in any order; the board keeps the newest)
    if (update instanceof StatusUpdate.Published published) {
      board.published(published.status());
    }
    topic.tell(Topic.publish(update));
  }

  void connectorStarted(EngineKey key, EngineConnector connector) {
    local.put(key, connector);
    onStart.forEach(listener -> listener.accept(key, connector));
  }

  void connectorStopped(EngineKey key, EngineConnector connector) {
    local.remove(key, connector);
    onStop.forEach(listener -> listener.accept(key, connector));
  }

  /** Hears of connectors starting and stopping on this node (metrics register and remove their series). */
  public void onConnectors(BiConsumer<EngineKey, EngineConnector> started,
      BiConsumer<EngineKey, EngineConnector> stopped) {
    onStart.add(started);
    onStop.add(stopped);
    local.forEach(started);
  }

  /** The connectors running on this node. */
  public Map<EngineKey, EngineConnector> localConnectors() {
    return Map.copyOf(local);
  }

  public StatusBoard board() {
    return board;
  }

  public EngineSources sources() {
    return sources;
  }

  EnginesSettings settings() {
    return settings;
  }

  EngineSink sink() {
    return sink;
  }

  Scraper scraper() {
    return scraper;
  }

  LongSupplier clock() {
    return clock;
  }

  EngineConnector.BatchListener batchListener() {
    return batchListener;
  }

  public String selfAddress() {
    return selfAddress;
  }
}
