package io.kvrouter.front;

import com.typesafe.config.Config;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.core.selection.SelectionRequests;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.front.routing.CircuitBreakers;
import io.kvrouter.front.routing.PromptRouting;
import io.kvrouter.tokenizer.ModelTokenizers;
import io.kvrouter.tokenizer.ModelsFileException;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every request path of a node shares, with no transport in it: the models file (reloaded every
 * {@code models-reload-interval}), the tokenizer threads, prompt routing, the timers, and the circuit breaker per
 * (model, worker). The HTTP front and the Gateway API endpoint picker (router-epp) both route through the one copy a
 * node starts ({@link #start}, idempotent), so a tokenizer is loaded once and a worker failing for one of them is
 * excluded by both. Configured by {@code kvrouter.front} (models file, tokenizer pool, breakers); stopped with the
 * actor system.
 */
public final class NodeRouting {
  private static final Logger log = LoggerFactory.getLogger(NodeRouting.class);

  private final FrontSettings settings;
  private final ModelTokenizers models;
  private final ThreadPoolExecutor tokenizers;
  private final ScheduledThreadPoolExecutor timers;
  private final PromptRouting routing;
  private final CircuitBreakers breakers;
  private final List<CircuitBreakers.Listener> breakerListeners = new CopyOnWriteArrayList<>();

  private NodeRouting(FrontSettings settings, RouterCluster cluster, RequestLimits limits) {
    this.settings = settings;
    this.models = loadModels(settings);
    this.tokenizers = new ThreadPoolExecutor(settings.tokenizerThreadCount(), settings.tokenizerThreadCount(), 60,
        TimeUnit.SECONDS, new ArrayBlockingQueue<>(settings.tokenizerQueue()), daemon("kvrouter-tokenizer"),
        new ThreadPoolExecutor.AbortPolicy());
    // every request schedules timeouts and most cancel them: cancelled timers leave the queue at once
    this.timers = new ScheduledThreadPoolExecutor(1, daemon("kvrouter-routing-timer"));
    timers.setRemoveOnCancelPolicy(true);
    this.routing = new PromptRouting(() -> models, new SelectionRequests(limits), tokenizers);
    this.breakers = new CircuitBreakers(settings.breakerFailures(), settings.breakerCoolDown(),
        System::currentTimeMillis, new CircuitBreakers.Listener() {
          @Override
          public void changed(String model, String workerId, CircuitBreakers.State from, CircuitBreakers.State to) {
            breakerListeners.forEach(l -> l.changed(model, workerId, from, to));
          }

          @Override
          public void forgotten(String model, String workerId) {
            breakerListeners.forEach(l -> l.forgotten(model, workerId));
          }
        });
    if (models != null && !settings.modelsReloadInterval().isZero()) {
      long every = settings.modelsReloadInterval().toMillis();
      timers.scheduleWithFixedDelay(this::reload, every, every, TimeUnit.MILLISECONDS);
    }
    // forget breakers of workers that left, and their series
    timers.scheduleWithFixedDelay(() -> prune(cluster), 10, 10, TimeUnit.SECONDS);
  }

  /**
   * This node's shared routing, started on first use from {@code kvrouter.front} in {@code config}; later calls
   * return the same one. Fails with {@link IllegalArgumentException} on bad settings or a models file that does not
   * load.
   */
  public static NodeRouting start(ActorSystem<?> system, RouterCluster cluster, Config config,
      RequestLimits limits) {
    Holder holder = Holder.ID.apply(system);
    synchronized (holder) {
      if (holder.routing == null) {
        NodeRouting routing = new NodeRouting(FrontSettings.fromConfig(config), cluster, limits);
        holder.routing = routing;
        system.getWhenTerminated().thenRun(routing::close);
      }
      return holder.routing;
    }
  }

  /** The shared routing started on {@code system}, or null when nothing started it. */
  public static NodeRouting get(ActorSystem<?> system) {
    Holder holder = Holder.ID.apply(system);
    synchronized (holder) {
      return holder.routing;
    }
  }

  public FrontSettings settings() {
    return settings;
  }

  /** The models file's registry, or null without one (every model in approximate mode). */
  public ModelTokenizers models() {
    return models;
  }

  public PromptRouting routing() {
    return routing;
  }

  public CircuitBreakers breakers() {
    return breakers;
  }

  /** Told of every breaker change and forgotten breaker (the front's metrics). */
  public void addBreakerListener(CircuitBreakers.Listener listener) {
    breakerListeners.add(listener);
  }

  public ScheduledExecutorService timers() {
    return timers;
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

  private void reload() {
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

  private void prune(RouterCluster cluster) {
    try {
      for (String model : breakers.models()) {
        SelectionView view = cluster.view(model);
        List<String> live = view == null ? List.of() : List.copyOf(view.workers().keySet());
        for (CircuitBreakers.Snapshot breaker : breakers.snapshot(model)) {
          if (!live.contains(breaker.workerId())) {
            breakerListeners.forEach(l -> l.forgotten(model, breaker.workerId()));
          }
        }
        breakers.retain(model, live);
      }
    } catch (RuntimeException e) {
      log.warn("pruning the circuit breakers failed", e);
    }
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, name + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    };
  }

  private void close() {
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

    NodeRouting routing;
  }
}
