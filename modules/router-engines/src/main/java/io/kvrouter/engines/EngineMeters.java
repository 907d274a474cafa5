package io.kvrouter.engines;

import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.connector.EngineConnector;
import io.kvrouter.engines.connector.EngineStatus;
import io.kvrouter.engines.connector.RankStatus;
import io.kvrouter.engines.placement.EnginePlacement;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;

/**
 * The series of the engine connectors running on this node, by {@code model}, {@code worker} and (per rank)
 * {@code rank}: registered when a connector starts here and removed when it stops or moves, so each engine's series
 * come from exactly one node of the region and add up across nodes.
 *
 * <table>
 *   <caption>series</caption>
 *   <tr><td>kvrouter_engine_available</td><td>1 while the last scrape is within the heartbeat timeout</td></tr>
 *   <tr><td>kvrouter_engine_registered</td><td>1 while the worker is registered</td></tr>
 *   <tr><td>kvrouter_engine_scrape_age_seconds</td><td>since the last scrape answered (-1: never)</td></tr>
 *   <tr><td>kvrouter_engine_scrape_errors_total</td><td>scrapes that failed</td></tr>
 *   <tr><td>kvrouter_engine_restarts_total</td><td>new engines detected</td></tr>
 *   <tr><td>kvrouter_engine_connected</td><td>per rank: 1 while the SUB socket is connected</td></tr>
 *   <tr><td>kvrouter_engine_last_sequence</td><td>per rank: last engine sequence number applied</td></tr>
 *   <tr><td>kvrouter_engine_lag_seconds</td><td>per rank: publish → index of the last batch</td></tr>
 *   <tr><td>kvrouter_engine_gaps_total, _replays_total, _replay_failures_total, _clears_total,
 *   _malformed_total, _batches_total, _skipped_blocks_total</td><td>per rank, as in the status</td></tr>
 * </table>
 */
public final class EngineMeters {
  private final EnginePlacement placement;
  private final Map<EngineKey, List<Meter>> meters = new ConcurrentHashMap<>();
  private volatile MeterRegistry registry;

  EngineMeters(EnginePlacement placement) {
    this.placement = placement;
  }

  /** Starts exporting into {@code registry} (once). */
  public synchronized void bindTo(MeterRegistry registry) {
    if (this.registry != null) {
      return;
    }
    this.registry = registry;
    placement.onConnectors(this::started, this::stopped);
  }

  private void started(EngineKey key, EngineConnector connector) {
    MeterRegistry target = registry;
    List<Meter> list = new ArrayList<>();
    Tags tags = Tags.of("model", key.model(), "worker", key.workerId());
    list.add(gauge(target, "kvrouter.engine.available", "1 while the engine's last scrape is within the heartbeat "
        + "timeout", tags, connector, c -> c.status().available() ? 1 : 0));
    list.add(gauge(target, "kvrouter.engine.registered", "1 while the engine is registered as a worker", tags,
        connector, c -> c.registered() != null ? 1 : 0));
    list.add(gauge(target, "kvrouter.engine.scrape.age.seconds", "Seconds since the engine's metrics last answered "
        + "(-1: never)", tags, connector, c -> {
          EngineStatus s = c.status();
          return s.lastScrapeOkMillis() == 0 ? -1 : (s.publishedAtMillis() - s.lastScrapeOkMillis()) / 1000.0;
        }));
    list.add(counter(target, "kvrouter.engine.scrape.errors", "Scrapes of the engine's metrics that failed", tags,
        connector, c -> c.status().scrapeErrors()));
    list.add(counter(target, "kvrouter.engine.restarts", "New engines detected on the worker id", tags, connector,
        c -> c.status().engineRestarts()));
    for (int r = 0; r < connector.spec().dpSize(); r++) {
      int rank = r;
      Tags rankTags = tags.and("rank", Integer.toString(r));
      list.add(gauge(target, "kvrouter.engine.connected", "1 while the rank's KV event socket is connected",
          rankTags, connector, c -> rank(c, rank).connected() ? 1 : 0));
      list.add(gauge(target, "kvrouter.engine.last.sequence", "Last engine sequence number applied (-1: none)",
          rankTags, connector, c -> rank(c, rank).lastSeq()));
      list.add(gauge(target, "kvrouter.engine.lag.seconds", "Engine publish to index of the rank's last batch",
          rankTags, connector, c -> rank(c, rank).lagMillis() / 1000.0));
      list.add(counter(target, "kvrouter.engine.gaps", "Sequence gaps on the rank's live stream", rankTags,
          connector, c -> rank(c, rank).gaps()));
      list.add(counter(target, "kvrouter.engine.replays", "Replays answered", rankTags, connector,
          c -> rank(c, rank).replays()));
      list.add(counter(target, "kvrouter.engine.replay.failures", "Replays not answered", rankTags, connector,
          c -> rank(c, rank).replayFailures()));
      list.add(counter(target, "kvrouter.engine.caught.up.batches", "Batches the live stream missed that an idle "
          + "rank's catch-up replay applied", rankTags, connector, c -> rank(c, rank).caughtUpBatches()));
      list.add(counter(target, "kvrouter.engine.clears", "Times the connector cleared the rank", rankTags,
          connector, c -> rank(c, rank).clears()));
      list.add(counter(target, "kvrouter.engine.malformed", "Messages that were not an engine batch", rankTags,
          connector, c -> rank(c, rank).malformed()));
      list.add(counter(target, "kvrouter.engine.batches", "Engine batches applied", rankTags, connector,
          c -> rank(c, rank).batches()));
      list.add(counter(target, "kvrouter.engine.skipped.blocks", "Blocks and events the connector did not index "
          + "(unknown parent, unhashable, other group, unknown medium or type, over capacity)", rankTags, connector,
          c -> rank(c, rank).translation().skipped()));
    }
    List<Meter> previous = meters.put(key, list);
    if (previous != null) {
      previous.forEach(target::remove);
    }
  }

  private void stopped(EngineKey key, EngineConnector connector) {
    List<Meter> list = meters.remove(key);
    MeterRegistry target = registry;
    if (list != null && target != null) {
      list.forEach(target::remove);
    }
  }

  private static RankStatus rank(EngineConnector connector, int rank) {
    return connector.status().rank(rank);
  }

  private static Meter gauge(MeterRegistry registry, String name, String help, Tags tags, EngineConnector connector,
      ToDoubleFunction<EngineConnector> value) {
    return Gauge.builder(name, connector, value).description(help).tags(tags).strongReference(true)
        .register(registry);
  }

  private static Meter counter(MeterRegistry registry, String name, String help, Tags tags,
      EngineConnector connector, ToDoubleFunction<EngineConnector> value) {
    return FunctionCounter.builder(name, connector, value).description(help).tags(tags).register(registry);
  }
}
