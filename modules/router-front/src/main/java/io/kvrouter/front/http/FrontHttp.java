package io.kvrouter.front.http;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.front.FrontSettings;
import io.kvrouter.front.metrics.FrontMetrics;
import io.kvrouter.front.request.RequestParser;
import io.kvrouter.front.routing.CircuitBreakers;
import io.kvrouter.front.routing.PromptRouting;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.stream.Materializer;

/** The front's HTTP edge: the engine client and the server, wired. */
public final class FrontHttp {
  private final EngineClient engines;
  private final FrontSettings settings;

  public FrontHttp(ActorSystem<?> system, FrontSettings settings) {
    this.settings = settings;
    this.engines = new EngineClient(system, settings);
  }

  public CompletionStage<ServerBinding> bind(ActorSystem<?> system, RouterCluster cluster, RequestParser parser,
      PromptRouting routing, CircuitBreakers breakers, FrontMetrics metrics, ScheduledExecutorService timers,
      Materializer materializer, BooleanSupplier serving) {
    FrontContext ctx = new FrontContext(settings, cluster, parser, routing, breakers, metrics, engines, timers,
        materializer, new AccessLog());
    return new FrontServer(ctx, serving).bind(system);
  }
}
