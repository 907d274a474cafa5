package io.kvrouter.cluster.regions;

import io.kvrouter.cluster.serialization.CborSerializable;
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
 *
 * <p>The pool a global call goes to is chosen ahead of the calls, not by them: again whenever a summary arrives or
 * this node counts a Book it relayed, and on the listener's sweep every quarter of {@code stale-after} (so a silent
 * pool ranks as stale at most that much later than {@code stale-after}). A global Select then costs one map lookup
 * more than a regional one: no clock read, no walk over the regions.
 */
public final class PoolSummaries {
  public static final String TOPIC = "kvrouter-pools";

  /** A summary on the topic. */
  public record Published(PoolSummary summary) implements CborSerializable {}

  /** A model's pools by region, and the one global calls go to. */
  private static final class ModelPools {
    final Map<String, PoolSummary> byRegion = new ConcurrentHashMap<>();
    volatile PoolSummary chosen;
  }

  private final Map<String, ModelPools> byModel = new ConcurrentHashMap<>();
  private final LongSupplier millis;
  private final long staleAfterMillis;
  private final long forgetAfterMillis;

  public PoolSummaries(LongSupplier millis, RegionsConfig config) {
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
    ModelPools model = byModel.computeIfAbsent(summary.model(), m -> new ModelPools());
    PoolSummary heard = summary.heardAt(millis.getAsLong());
    model.byRegion.compute(summary.region(), (region, known) -> {
      if (known != null && (known.epoch() > summary.epoch()
          || (known.epoch() == summary.epoch() && known.sequence() >= summary.sequence()))) {
        return known;
      }
      return summary.workers() > 0 ? heard : null;
    });
    rechoose(model);
    if (model.byRegion.isEmpty()) {
      byModel.remove(summary.model(), model);
    }
  }

  /** This node relayed a Book of {@code islTokens} to the pool: count it until the pool's next summary. */
  public void booked(String model, String region, int islTokens) {
    ModelPools pools = byModel.get(model);
    if (pools != null) {
      pools.byRegion.computeIfPresent(region, (r, known) -> known.plusBooking(islTokens));
      rechoose(pools);
    }
  }

  /** Drops pools not heard of for {@code forget-after} and chooses every model's pool again. */
  void sweep() {
    long now = millis.getAsLong();
    byModel.values().forEach(pools -> {
      pools.byRegion.values().removeIf(p -> p.ageMillis(now) > forgetAfterMillis);
      rechoose(pools);
    });
    byModel.values().removeIf(pools -> pools.byRegion.isEmpty());
  }

  private void rechoose(ModelPools pools) {
    pools.chosen = PoolChooser.choose(pools.byRegion.values(), millis.getAsLong(), staleAfterMillis);
  }

  /** The pools of a model this node knows, in no particular order. */
  public Collection<PoolSummary> pools(String model) {
    ModelPools pools = byModel.get(model);
    return pools == null ? List.of() : pools.byRegion.values();
  }

  /** The pool of {@code model} in {@code region} as this node last heard it, or null. */
  public PoolSummary pool(String model, String region) {
    ModelPools pools = byModel.get(model);
    return pools == null ? null : pools.byRegion.get(region);
  }

  /**
   * The pool a global call for {@code model} goes to ({@link PoolChooser}, as of the last summary, relayed Book or
   * sweep), or null when none has workers.
   */
  public PoolSummary choose(String model) {
    ModelPools pools = byModel.get(model);
    return pools == null ? null : pools.chosen;
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

  /** Subscribes to the topic and keeps what it hears; {@link #sweep}s every {@code sweepInterval}. */
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
            summaries.sweep();
            return Behaviors.same();
          })
          .build();
    }));
  }
}
