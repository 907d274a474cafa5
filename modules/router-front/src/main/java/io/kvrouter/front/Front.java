package io.kvrouter.front;

import com.typesafe.config.Config;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionRequests;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.front.metrics.FrontMetrics;
import io.kvrouter.front.request.RequestParser;
import io.kvrouter.front.routing.CircuitBreakers;
import io.kvrouter.front.routing.PromptRouting;
import io.kvrouter.tokenizer.ModelTokenizers;
import io.kvrouter.tokenizer.ModelsFileException;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.stream.Materializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The OpenAI-compatible front of one router node: the HTTP server, the models file, the tokenizer threads, the
 * circuit breakers and the front's metrics, started by {@link #start} and stopped with the actor system.
 * {@link #get} finds it (management routes read the breakers).
 */
public final class Front {
  private static final Logger log = LoggerFactory.getLogger(Front.class);

  private final FrontSettings settings;
  private final ServerBinding binding;
  private final CircuitBreakers breakers;
  private final ModelTokenizers models;
  private final ThreadPoolExecutor tokenizers;
  private final ScheduledExecutorService timers;

  private Front(FrontSettings settings, ServerBinding binding, CircuitBreakers breakers, ModelTokenizers models,
      ThreadPoolExecutor tokenizers, ScheduledExecutorService timers) {
    this.settings = settings;
    this.binding = binding;
    this.breakers = breakers;
    this.models = models;
    this.tokenizers = tokenizers;
    this.timers = timers;
  }

  /**
   * Starts the front of this node from {@code kvrouter.front} in {@code config}, metering into {@code registry};
   * {@code serving} says whether the node serves (GET /health). Completes once bound.
   */
  public static CompletionStage<Front> start(ActorSystem<?> system, RouterCluster cluster, Config config,
      RequestLimits limits, MeterRegistry registry, BooleanSupplier serving) {
    FrontSettings settings = FrontSettings.fromConfig(config);
    ModelTokenizers models = loadModels(settings);
    FrontMetrics metrics = new FrontMetrics(registry, model -> {
      SelectionView view = cluster.view(model);
      return view != null && !view.isEmpty();
    });
    CircuitBreakers breakers = new CircuitBreakers(settings.breakerFailures(), settings.breakerCoolDown(),
        System::currentTimeMillis, metrics.breakerListener());
    ThreadPoolExecutor tokenizers = new ThreadPoolExecutor(settings.tokenizerThreadCount(),
        settings.tokenizerThreadCount(), 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(settings.tokenizerQueue()),
        daemon("kvrouter-front-tokenizer"), new ThreadPoolExecutor.AbortPolicy());
    // every request schedules its first-byte timeout and most cancel it: cancelled timers leave the queue at once
    java.util.concurrent.ScheduledThreadPoolExecutor timers = new java.util.concurrent.ScheduledThreadPoolExecutor(1,
        daemon("kvrouter-front-timer"));
    timers.setRemoveOnCancelPolicy(true);
    var engines = new io.kvrouter.front.http.FrontHttp(system, settings);
    PromptRouting routing = new PromptRouting(() -> models, new SelectionRequests(limits), tokenizers);
    RequestParser parser = new RequestParser(settings.maxJsonDepth(), settings.maxBodyBytes(),
        settings.maxClientIdLength());
    if (models != null && !settings.modelsReloadInterval().isZero()) {
      long every = settings.modelsReloadInterval().toMillis();
      timers.scheduleWithFixedDelay(() -> reload(models), every, every, TimeUnit.MILLISECONDS);
    }
    // forget breakers of workers that left, and their series
    timers.scheduleWithFixedDelay(() -> prune(cluster, breakers, metrics), 10, 10, TimeUnit.SECONDS);
    return engines.bind(system, cluster, parser, routing, breakers, metrics, timers,
            Materializer.matFromSystem(system), serving)
        .thenApply(binding -> {
          Front front = new Front(settings, binding, breakers, models, tokenizers, timers);
          Holder.ID.apply(system).front = front;
          system.getWhenTerminated().thenRun(front::close);
          InetSocketAddress address = binding.localAddress();
          log.info("kvrouter front (OpenAI-compatible HTTP/1.1 and h2c) on http://{}:{}, models file {}",
              address.getHostString(), address.getPort(), settings.modelsFile() == null ? "none (approximate mode)"
                  : settings.modelsFile());
          return front;
        })
        .whenComplete((front, failure) -> {
          if (failure != null) {
            tokenizers.shutdownNow();
            timers.shutdownNow();
            if (models != null) {
              models.close();
            }
          }
        });
  }

  private static ModelTokenizers loadModels(FrontSettings settings) {
    if (settings.modelsFile() == null) {
      return null;
    }
    try {
      return ModelTokenizers.load(settings.modelsFile());
    } catch (ModelsFileException e) {
      throw new IllegalArgumentException("KVROUTER_MODELS: " + e.getMessage(), e);
    }
  }

  private static void reload(ModelTokenizers models) {
    try {
      ModelTokenizers.ReloadResult result = models.reload();
      if (!result.applied()) {
        log.warn("models file {} not reloaded: {}", models.file(), result.error());
      } else if (!result.added().isEmpty() || !result.removed().isEmpty() || !result.reloaded().isEmpty()) {
        log.info("models file {} reloaded: added {}, removed {}, reloaded {}", models.file(), result.added(),
            result.removed(), result.reloaded());
      }
    } catch (RuntimeException e) {
      log.warn("models file {} not reloaded", models.file(), e);
    }
  }

  private static void prune(RouterCluster cluster, CircuitBreakers breakers, FrontMetrics metrics) {
    try {
      for (String model : breakers.models()) {
        SelectionView view = cluster.view(model);
        List<String> live = view == null ? List.of() : List.copyOf(view.workers().keySet());
        for (CircuitBreakers.Snapshot breaker : breakers.snapshot(model)) {
          if (!live.contains(breaker.workerId())) {
            metrics.breakerForgotten(model, breaker.workerId());
          }
        }
        breakers.retain(model, live);
      }
    } catch (RuntimeException e) {
      log.warn("pruning the front's breakers failed", e);
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, name + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    };
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

  /** This node's circuit breakers. */
  public CircuitBreakers breakers() {
    return breakers;
  }

  /** The models file's registry, or null without one. */
  public ModelTokenizers models() {
    return models;
  }

  private void close() {
    binding.unbind();
    tokenizers.shutdownNow();
    timers.shutdownNow();
    if (models != null) {
      models.close();
    }
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
