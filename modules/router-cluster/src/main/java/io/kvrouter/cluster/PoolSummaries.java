package io.kvrouter.cluster;

import io.kvrouter.core.regions.PoolChooser;
import io.kvrouter.core.regions.PoolSummary;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * What this node last heard of every pool (model, region), from the summaries the admission actors of every region
 * publish on the cluster-wide topic {@value #TOPIC}. Read on gRPC threads (global calls, state); written by this
 * node's {@link #listener}. At-most-once is enough: summaries are periodic, and a pool not heard of for
 * {@code stale-after} is stale.
 */
public final class PoolSummaries {
  public static final String TOPIC = "kvrouter-pools";

  /** A summary on the topic. */
  public record Published(PoolSummary summary) implements CborSerializable {}

  private final Map<String, Map<String, PoolSummary>> byModel = new ConcurrentHashMap<>();
  private final LongSupplier millis;
  private final long staleAfterMillis;
  private final long forgetAfterMillis;

  PoolSummaries(LongSupplier millis, RegionsConfig config) {
    this.millis = millis;
    this.staleAfterMillis = config.staleAfter().toMillis();
    this.forgetAfterMillis = config.forgetAfter().toMillis();
  }

  public long staleAfterMillis() {
    return staleAfterMillis;
  }

  public long nowMillis() {
    return millis.getAsLong();
  }

  /** Keeps a summary unless this node heard a newer one of its pool; a pool without workers is dropped. */
  void heard(PoolSummary summary) {
    Map<String, PoolSummary> pools = byModel.computeIfAbsent(summary.model(), m -> new ConcurrentHashMap<>());
    PoolSummary heard = summary.heardAt(millis.getAsLong());
    pools.compute(summary.region(), (region, known) -> {
      if (known != null && (known.epoch() > summary.epoch()
          || (known.epoch() == summary.epoch() && known.sequence() >= summary.sequence()))) {
        return known;
      }
      return summary.workers() > 0 ? heard : null;
    });
    if (pools.isEmpty()) {
      byModel.remove(summary.model(), pools);
    }
  }

  /** This node relayed a Book of {@code islTokens} to the pool: count it until the pool's next summary. */
  public void booked(String model, String region, int islTokens) {
    Map<String, PoolSummary> pools = byModel.get(model);
    if (pools != null) {
      pools.computeIfPresent(region, (r, known) -> known.plusBooking(islTokens));
    }
  }

  /** Drops pools not heard of for {@code forget-after}. */
  void forgetSilent() {
    long now = millis.getAsLong();
    byModel.values().forEach(pools -> pools.values().removeIf(p -> p.ageMillis(now) > forgetAfterMillis));
    byModel.values().removeIf(Map::isEmpty);
  }

  /** The pools of a model this node knows, in no particular order. */
  public Collection<PoolSummary> pools(String model) {
    Map<String, PoolSummary> pools = byModel.get(model);
    return pools == null ? List.of() : pools.values();
  }

  /** The pool a global call for {@code model} goes to ({@link PoolChooser}), or null when none has workers. */
  public PoolSummary choose(String model) {
    Map<String, PoolSummary> pools = byModel.get(model);
    return pools == null ? null : PoolChooser.choose(pools.values(), millis.getAsLong(), staleAfterMillis);
  }

  /** The regions whose pools of {@code model} have workers, by name. */
  public Set<String> regionsWithWorkers(String model) {
    Set<String> regions = new TreeSet<>();
    for (PoolSummary pool : new ArrayList<>(pools(model))) {
      if (pool.workers() > 0) {
        regions.add(pool.region());
      }
    }
    return regions;
  }

  /** The listener's messages: a summary heard on the topic, or its timer's sweep. */
  sealed interface ListenerCommand {}

  private record Heard(Published published) implements ListenerCommand {}

  private enum Sweep implements ListenerCommand {
    INSTANCE
  }

  /** Subscribes to the topic and keeps what it hears; forgets silent pools every {@code sweepInterval}. */
  static Behavior<ListenerCommand> listener(PoolSummaries summaries, ActorRef<Topic.Command<Published>> topic,
      Duration sweepInterval) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
      topic.tell(Topic.subscribe(ctx.messageAdapter(Published.class, Heard::new)));
      timers.startTimerWithFixedDelay(Sweep.INSTANCE, sweepInterval);
      return Behaviors.receive(ListenerCommand.class)
          .onMessage(Heard.class, m -> {
            summaries.heard(m.published().summary());
            return Behaviors.same();
          })
          .onMessageEquals(Sweep.INSTANCE, () -> {
            summaries.forgetSilent();
            return Behaviors.same();
          })
          .build();
    }));
  }
}
