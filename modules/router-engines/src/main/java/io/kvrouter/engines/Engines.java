package io.kvrouter.engines;

import com.typesafe.config.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.kvrouter.engines.config.EnginesSettings;
import io.kvrouter.engines.connector.EngineConnector;
import io.kvrouter.engines.connector.EngineSink;
import io.kvrouter.engines.discovery.EngineSources;
import io.kvrouter.engines.discovery.FileSource;
import io.kvrouter.engines.discovery.KubernetesSource;
import io.kvrouter.engines.metrics.Scraper;
import io.kvrouter.engines.placement.EnginePlacement;
import io.kvrouter.engines.placement.StatusBoard;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * The engines of one router node: its sources (the engines file, Kubernetes discovery), the placement that runs one
 * connector per engine in the region, the scraper, the status board and the metrics. {@link #start} once per node;
 * {@link #get} finds it (the management routes do).
 */
public final class Engines implements AutoCloseable {
  private final EnginesSettings settings;
  private final EngineSources sources;
  private final EnginePlacement placement;
  private final Scraper scraper;
  private final EngineMeters meters;
  private final List<AutoCloseable> closeables;

  private Engines(EnginesSettings settings, EngineSources sources, EnginePlacement placement, Scraper scraper,
      List<AutoCloseable> closeables) {
    this.settings = settings;
    this.sources = sources;
    this.placement = placement;
    this.scraper = scraper;
    this.closeables = closeables;
    this.meters = new EngineMeters(placement);
  }

  /** Starts the node's engines from {@code kvrouter.engines}; every node can host connectors. */
  public static Engines start(ActorSystem<?> system, EngineSink sink) {
    return start(system, sink, System::currentTimeMillis, EngineConnector.BatchListener.NONE);
  }

  public static Engines start(ActorSystem<?> system, EngineSink sink, LongSupplier clock,
      EngineConnector.BatchListener listener) {
    Config config = system.settings().config();
    EnginesSettings settings = EnginesSettings.fromConfig(config);
    EngineSources sources = new EngineSources();
    Scraper scraper = new Scraper(settings.connector().scrapeInterval(), settings.connector().scrapeTimeout());
    List<AutoCloseable> closeables = new ArrayList<>();
    closeables.add(scraper);
    EnginePlacement placement = EnginePlacement.start(system, settings, sink, sources, scraper, clock, listener);
    if (!settings.file().isEmpty()) {
      closeables.add(new FileSource(Path.of(settings.file()), sources, settings.filePollInterval()));
    }
    if (settings.kubernetes()) {
      KubernetesClient client = new KubernetesClientBuilder().build();
      closeables.add(client);
      closeables.add(0, new KubernetesSource(client, settings.kubernetesNamespace(),
          settings.kubernetesLabelSelector(), settings.kubernetesResync(), sources));
    }
    Engines engines = new Engines(settings, sources, placement, scraper, closeables);
    Holder.ID.apply(system).engines = engines;
    system.getWhenTerminated().thenRun(engines::close);
    return engines;
  }

  /** The node's engines, or null when {@link #start} has not run on this system. */
  public static Engines get(ActorSystem<?> system) {
    return Holder.ID.apply(system).engines;
  }

  public EnginesSettings settings() {
    return settings;
  }

  public EngineSources sources() {
    return sources;
  }

  public EnginePlacement placement() {
    return placement;
  }

  public StatusBoard board() {
    return placement.board();
  }

  public Scraper scraper() {
    return scraper;
  }

  /** This node's engine series (Micrometer), bound into a registry by {@link EngineMeters#bindTo}. */
  public EngineMeters meters() {
    return meters;
  }

  @Override
  public void close() {
    for (AutoCloseable closeable : closeables) {
      try {
        closeable.close();
      } catch (Exception e) {
        // closing on the way out: nothing left to tell
      }
    }
    placement.localConnectors().values().forEach(EngineConnector::close);
  }

  private static final class Holder implements Extension {
    static final ExtensionId<Holder> ID = new ExtensionId<>() {
      @Override
      public Holder createExtension(ActorSystem<?> system) {
        return new Holder();
      }
    };

    volatile Engines engines;
  }
}
