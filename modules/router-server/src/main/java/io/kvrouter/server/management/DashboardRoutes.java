package io.kvrouter.server.management;

import static org.apache.pekko.http.javadsl.server.Directives.concat;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.getFromResource;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.reject;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithHeaders;

import java.util.List;
import java.util.Map;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpCharsets;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;

/**
 * {@code GET /dashboard}: a live page over the JSON management routes ({@code /models}, {@code /models/state},
 * {@code /models/explain}, {@code /models/pools}), plain HTML, JavaScript and CSS from the classpath. Only the files
 * named in {@link #ASSETS} are served, so no request path reaches any other resource.
 */
public final class DashboardRoutes implements ManagementRouteProvider {
  private static final String RESOURCE_DIR = "dashboard/";
  private static final String INDEX = "index.html";
  private static final Map<String, ContentType> ASSETS = Map.of(
      INDEX, ContentTypes.TEXT_HTML_UTF8,
      "dashboard.js", ContentTypes.create(MediaTypes.APPLICATION_JAVASCRIPT, HttpCharsets.UTF_8),
      "dashboard.css", ContentTypes.create(MediaTypes.TEXT_CSS, HttpCharsets.UTF_8));
  // the page polls every second: a browser must never run an old script against newer routes
  private static final List<HttpHeader> HEADERS = List.of(
      RawHeader.create("Cache-Control", "no-cache"),
      RawHeader.create("X-Content-Type-Options", "nosniff"));

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    return pathPrefix("dashboard", () -> get(() -> respondWithHeaders(HEADERS, () -> concat(
        pathEndOrSingleSlash(() -> asset(INDEX)),
        path(PathMatchers.segment(), name -> ASSETS.containsKey(name) ? asset(name) : reject())))));
  }

  private static Route asset(String name) {
    return getFromResource(RESOURCE_DIR + name, ASSETS.get(name));
  }
}
