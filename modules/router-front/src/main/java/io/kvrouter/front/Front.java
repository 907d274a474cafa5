package io.kvrouter.front;

import com.typesafe.config.Config;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.front.metrics.FrontMetrics;
import io.kvrouter.front.request.RequestParser;
import io.kvrouter.front.routing.CircuitBreakers;
import io.kvrouter.tokenizer.ModelTokenizers;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.stream.Materializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The OpenAI-compatible front of one router node: the HTTP server and the front's metrics over the node's shared
 * {@link NodeRouting} (models file, tokenizer threads, circuit breakers), started by {@link #start} and stopped with
 * the actor system. {@link #get} finds it.
 */
public final class Front {
  private static final Logger log = LoggerFactory.getLogger(Front.class);

  private final FrontSettings settings;
  private final ServerBinding binding;
  private final NodeRouting shared;

  private Front(FrontSettings settings, ServerBinding binding, NodeRouting shared) {
    this.settings = settings;
    this.binding = binding;
    this.shared = shared;
  }

  /**
   * Starts the front of this node from {@code kvrouter.front} in {@code config}, metering into {@code registry};
   * {@code serving} says whether the node serves (GET /health). The models file, tokenizer threads and breakers are
   * the node's {@link NodeRouting} (started here unless the endpoint picker started it). Completes once bound.
   */
  public static CompletionStage<Front> start(ActorSystem<?> system, RouterCluster cluster, Config config,
      RequestLimits limits, MeterRegistry registry, BooleanSupplier serving) {
    FrontSettings settings = FrontSettings.fromConfig(config);
    NodeRouting shared = NodeRouting.start(system, cluster, config, limits);
    FrontMetrics metrics = new FrontMetrics(registry, model -> {
      SelectionView view = cluster.view(model);
      return view != null && !view.isEmpty();
    });
    shared.addBreakerListener(metrics.breakerListener());
    // the pair series of workers that left go, as NodeRouting drops their breakers' series
    shared.timers().scheduleWithFixedDelay(() -> {
      try {
        metrics.prunePairs((model, worker) -> {
          SelectionView view = cluster.view(model);
          return view != null && view.worker(worker) != null;
        });
      } catch (RuntimeException e) {
        log.warn("pruning the front's pair series failed", e); // a throwing task would not run again
      }
    }, 10, 10, TimeUnit.SECONDS);
    var engines = new io.kvrouter.front.http.FrontHttp(system, settings);
    RequestParser parser = new RequestParser(settings.maxJsonDepth(), settings.maxBodyBytes(),
        settings.maxClientIdLength());
    return engines.bind(system, cluster, parser, shared.routing(), shared.breakers(), metrics, shared.timers(),
            Materializer.matFromSystem(system), serving)
        .thenApply(binding -> {
          Front front = new Front(settings, binding, shared);
          Holder.ID.apply(system).front = front;
          system.getWhenTerminated().thenRun(binding::unbind);
          InetSocketAddress address = binding.localAddress();
          log.info("kvrouter front (OpenAI-compatible HTTP/1.1 and h2c) on http://{}:{}, models file {}",
              address.getHostString(), address.getPort(), settings.modelsFile() == null ? "none (approximate mode)"
                  : settings.modelsFile());
          return front;
        });
  }

  /** The front started on {@code system}, or null when none runs there. */
  public static Front get(ActorSystem<?> system) {
    return Holder.ID.apply(system).front;
  }

  public FrontSettings settings() {
    return settings;
  }

  /** The address the front is bound to. */
  public InetSocketAddress address() {
    return binding.localAddress();
  }

  public int port() {
    return binding.localAddress().getPort();
  }

  /** This node's circuit breakers (shared with the endpoint picker). */
  public CircuitBreakers breakers() {
    return shared.breakers();
  }

  /** The models file's registry, or null without one. */
  public ModelTokenizers models() {
    return shared.models();
  }

  private static final class Holder implements Extension {
    static final ExtensionId<Holder> ID = new ExtensionId<>() {
      @Override
      public Holder createExtension(ActorSystem<?> system) {
        return new Holder();
      }
    };

    volatile Front front;
  }
}
