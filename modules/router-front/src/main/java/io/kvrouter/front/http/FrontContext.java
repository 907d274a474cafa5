package io.kvrouter.front.http;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.front.FrontSettings;
import io.kvrouter.front.metrics.FrontMetrics;
import io.kvrouter.front.request.RequestParser;
import io.kvrouter.front.routing.CircuitBreakers;
import io.kvrouter.front.routing.PromptRouting;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.pekko.stream.Materializer;

/** What every request of the front shares. */
record FrontContext(FrontSettings settings, RouterCluster cluster, RequestParser parser, PromptRouting routing,
    CircuitBreakers breakers, FrontMetrics metrics, EngineClient engines, ScheduledExecutorService timers,
    Materializer materializer, AccessLog accessLog) {}
