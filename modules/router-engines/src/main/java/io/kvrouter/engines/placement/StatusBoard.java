package io.kvrouter.engines.placement;

import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.connector.EngineStatus;
import io.kvrouter.engines.connector.RankCheckpoint;
import io.kvrouter.engines.connector.RankStatus;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * This node's copy of every engine connector's status in the region, fed by the status topic: what the management
 * routes and the dashboard show on any node, and the checkpoints a node that takes a connector over starts from. A
 * status not heard of for three status intervals is shown as stale (its node may be gone) and kept until the engine
 * is retired, so its checkpoints outlive the node that wrote them.
 */
public final class StatusBoard {
  /** A status as this node holds it. */
  public record Seen(EngineStatus status, long receivedAtMillis, boolean stale) {}

  private final Map<EngineKey, Seen> statuses = new ConcurrentHashMap<>();
  private final LongSupplier clock;
  private final long staleAfterMillis;

  public StatusBoard(LongSupplier clock, long staleAfterMillis) {
    this.clock = clock;
    this.staleAfterMillis = staleAfterMillis;
  }

  /** Keeps {@code status} unless a newer incarnation's (or a later one of the same incarnation) is held. */
  public void published(EngineStatus status) {
    EngineKey key = new EngineKey(status.model(), status.workerId());
    long now = clock.getAsLong();
    statuses.compute(key, (k, held) -> held == null || newer(status, held.status())
        ? new Seen(status, now, false) : held);
  }

  public void retired(String model, String workerId, long incarnation) {
    statuses.computeIfPresent(new EngineKey(model, workerId),
        (k, held) -> held.status().incarnation() <= incarnation ? null : held);
  }

  private static boolean newer(EngineStatus candidate, EngineStatus held) {
    return candidate.incarnation() > held.incarnation()
        || (candidate.incarnation() == held.incarnation()
        && candidate.publishedAtMillis() >= held.publishedAtMillis());
  }

  public Seen get(EngineKey key) {
    Seen seen = statuses.get(key);
    return seen == null ? null : withStaleness(seen);
  }

  /** The engines of {@code model}, by worker id. */
  public List<Seen> forModel(String model) {
    List<Seen> result = new ArrayList<>();
    statuses.forEach((key, seen) -> {
      if (key.model().equals(model)) {
        result.add(withStaleness(seen));
      }
    });
    result.sort(Comparator.comparing(seen -> seen.status().workerId()));
    return result;
  }

  public List<Seen> all() {
    List<Seen> result = new ArrayList<>();
    statuses.values().forEach(seen -> result.add(withStaleness(seen)));
    result.sort(Comparator.comparing((Seen seen) -> seen.status().model())
        .thenComparing(seen -> seen.status().workerId()));
    return result;
  }

  /** The ranks' checkpoints of the last status held for {@code key} (empty when none). */
  public Map<Integer, RankCheckpoint> checkpoints(EngineKey key) {
    Seen seen = statuses.get(key);
    Map<Integer, RankCheckpoint> checkpoints = new HashMap<>();
    if (seen != null && seen.status().registered()) {
      for (RankStatus rank : seen.status().ranks()) {
        if (rank.checkpoint() != null && rank.checkpoint().lastSeq() >= 0) {
          checkpoints.put(rank.rank(), rank.checkpoint());
        }
      }
    }
    return checkpoints;
  }

  private Seen withStaleness(Seen seen) {
    boolean stale = clock.getAsLong() - seen.receivedAtMillis() > staleAfterMillis;
    return stale == seen.stale() ? seen : new Seen(seen.status(), seen.receivedAtMillis(), stale);
  }
}
