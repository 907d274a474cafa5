package io.kvrouter.server.management;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onComplete;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import io.kvrouter.server.metrics.RouterMetrics;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;

/** {@code GET /metrics}: the node's metrics in Prometheus' text format (read-only; see {@link RouterMetrics}). */
public final class MetricsRoutes implements ManagementRouteProvider {
  private static final ContentType.NonBinary TEXT = ContentTypes.TEXT_PLAIN_UTF8;

  private final ExtendedActorSystem system;

  public MetricsRoutes(ExtendedActorSystem system) {
    this.system = system;
  }

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    RouterMetrics metrics = RouterMetrics.get(Adapter.toTyped(system));
    return path("metrics", () -> get(() -> onComplete(metrics.scrape(), result -> result.isSuccess()
        ? complete(HttpResponse.create().withEntity(HttpEntities.create(TEXT, result.get())))
        : complete(StatusCodes.SERVICE_UNAVAILABLE, "metrics unavailable: " + result.failed().get()))));
  }
}
