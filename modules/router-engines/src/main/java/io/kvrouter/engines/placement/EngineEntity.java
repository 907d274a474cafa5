package io.kvrouter.engines.placement;

import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.config.EngineSpec;
import io.kvrouter.engines.connector.EngineConnector;
import io.kvrouter.engines.connector.EngineStatus;
import io.kvrouter.engines.discovery.SourcedSpec;
import io.kvrouter.engines.metrics.Scraper;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * The one connector of an engine in the region: a Cluster Sharding entity per (model, worker id), started by the
 * first {@link Ensure} any node sends and kept alive by every node re-sending it each ensure interval from its own
 * sources. No remembered-entities store is needed: when the node running it dies, sharding reallocates its shard and
 * the next Ensure from any survivor starts it there.
 *
 * <p><b>Which configuration wins.</b> The engine's entry in the sources of the node running the connector, when that
 * node lists it; otherwise the entry of the lowest-addressed node among those that ensured it within
 * {@code forget-after}. The status names the node and origin used and the nodes whose entries differ.
 *
 * <p>An engine no node has ensured for {@code forget-after} (or that every node retired) is retired: its connector
 * stops and the worker is deregistered; the entity passivates. On a rebalance (sharding's stop message) the
 * connector stops and the worker stays registered: the connector restarts on another node from the checkpoints in
 * its last status, published as it stops.
 */
public final class EngineEntity {
  public static final EntityTypeKey<Command> TYPE = EntityTypeKey.create(Command.class, "kvrouter-engine");

  public sealed interface Command extends EngineMessage {}

  /** "Run this engine": sent by every node whose sources list it, every ensure interval. */
  public record Ensure(EngineSpec spec, String origin, String fromNode) implements Command {}

  /** The node's sources no longer list the engine. */
  public record Retire(String fromNode) implements Command {}

  /** Expiry of ensures (the connector publishes its own status). */
  public enum Tick implements Command {
    INSTANCE
  }

  /** Sharding's stop message: the entity moves (rebalance, the node leaves) or passivates. */
  public enum Stop implements Command {
    INSTANCE
  }

  private record Heard(SourcedSpec spec, long atMillis) {}

  private final EngineKey key;
  private final ActorContext<Command> context;
  private final ActorRef<ClusterSharding.ShardCommand> shard;
  private final EnginePlacement placement;
  private final Map<String, Heard> ensures = new TreeMap<>();
  private EngineConnector connector;
  private Scraper.Handle scrapes;
  private SourcedSpec running;
  private String runningFrom;
  private boolean retiring;

  private EngineEntity(EngineKey key, ActorContext<Command> context, ActorRef<ClusterSharding.ShardCommand> shard,
      EnginePlacement placement) {
    this.key = key;
    this.context = context;
    this.shard = shard;
    this.placement = placement;
  }

  static Behavior<Command> create(String entityId, ActorRef<ClusterSharding.ShardCommand> shard,
      EnginePlacement placement) {
    EngineKey key = EngineKey.fromEntityId(entityId);
    return Behaviors.setup(context -> Behaviors.withTimers(timers -> {
      if (key == null) {
        context.getLog().warn("not an engine entity id: {}", entityId);
        return Behaviors.stopped();
      }
      timers.startTimerWithFixedDelay(Tick.INSTANCE, placement.settings().statusInterval());
      return new EngineEntity(key, context, shard, placement).behavior(timers);
    }));
  }

  private Behavior<Command> behavior(TimerScheduler<Command> timers) {
    return Behaviors.receive(Command.class)
        .onMessage(Ensure.class, ensure -> {
          if (!retiring) {
            ensures.put(ensure.fromNode(), new Heard(new SourcedSpec(ensure.spec(), ensure.origin()),
                placement.clock().getAsLong()));
            decide();
          }
          return Behaviors.same();
        })
        .onMessage(Retire.class, retire -> {
          ensures.remove(retire.fromNode());
          decide();
          return Behaviors.same();
        })
        .onMessageEquals(Tick.INSTANCE, () -> {
          long cutoff = placement.clock().getAsLong() - placement.settings().forgetAfter().toMillis();
          ensures.values().removeIf(heard -> heard.atMillis() < cutoff);
          decide();
          return Behaviors.same();
        })
        .onMessageEquals(Stop.INSTANCE, () -> {
          stopConnector(false);
          return Behaviors.stopped();
        })
        .build();
  }

  /** Starts, restarts (another configuration won) or retires the connector. */
  private void decide() {
    if (retiring) {
      return;
    }
    SourcedSpec local = placement.sources().engine(key);
    String self = placement.selfAddress();
    SourcedSpec chosen;
    String from;
    if (local != null) {
      chosen = local;
      from = self;
    } else if (!ensures.isEmpty()) {
      Map.Entry<String, Heard> first = ensures.entrySet().iterator().next();
      chosen = first.getValue().spec();
      from = first.getKey();
    } else {
      retire();
      return;
    }
    List<String> conflicts = new ArrayList<>();
    ensures.forEach((node, heard) -> {
      if (!heard.spec().spec().equals(chosen.spec()) && !node.equals(from)) {
        conflicts.add(node);
      }
    });
    if (connector != null && running.spec().equals(chosen.spec())) {
      connector.configSource(from, chosen.origin(), conflicts);
      running = chosen;
      runningFrom = from;
      return;
    }
    if (connector != null) {
      context.getLog().info("engine {}: configuration from {} replaces the running one", key, from);
      stopConnector(false);
    }
    startConnector(chosen, from, conflicts);
  }

  private void startConnector(SourcedSpec spec, String from, List<String> conflicts) {
    var checkpoints = placement.board().checkpoints(key);
    if (!spec.spec().problems().isEmpty()) {
      context.getLog().warn("engine {}: not started, its configuration is invalid: {}", key, spec.spec().problems());
      return;
    }
    connector = new EngineConnector(spec.spec(), placement.selfAddress(), from, spec.origin(), placement.sink(),
        placement.settings().connector(), checkpoints, placement.clock(), placement.batchListener());
    connector.configSource(from, spec.origin(), conflicts);
    running = spec;
    runningFrom = from;
    connector.publishStatus(placement.settings().statusInterval(),
        status -> placement.publish(new StatusUpdate.Published(status)));
    connector.start();
    scrapes = placement.scraper().start(connector.scrapeTarget());
    placement.connectorStarted(key, connector);
    context.getLog().info("engine {}: connector started ({} checkpointed rank(s))", key, checkpoints.size());
  }

  private void stopConnector(boolean deregister) {
    if (connector == null) {
      return;
    }
    scrapes.cancel();
    if (deregister) {
      connector.retire();
    } else {
      connector.close();
    }
    EngineStatus last = connector.status();
    placement.connectorStopped(key, connector);
    placement.publish(new StatusUpdate.Published(last));
    connector = null;
    running = null;
  }

  private void retire() {
    retiring = true;
    long incarnation = connector == null ? Long.MAX_VALUE : connector.incarnation();
    stopConnector(true);
    placement.publish(new StatusUpdate.Retired(key.model(), key.workerId(), incarnation));
    context.getLog().info("engine {}: no node lists it any more: retired (worker deregistered)", key);
    shard.tell(new ClusterSharding.Passivate<>(context.getSelf()));
  }
}
