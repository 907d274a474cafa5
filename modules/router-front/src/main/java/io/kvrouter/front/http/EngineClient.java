package io.kvrouter.front.http;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.front.FrontSettings;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.Uri;
import org.apache.pekko.http.javadsl.settings.ConnectionPoolSettings;

/**
 * The engines' side: Pekko HTTP's client, a host connection pool per engine (keep-alive HTTP/1.1, as vLLM's uvicorn
 * serves it), the pool never retrying a request itself (the front decides), responses streamed with backpressure
 * (a slow client slows the engine's connection, never fills memory). Pekko HTTP is already the server here, so one
 * stream library carries a response from the engine's socket to the client's.
 */
final class EngineClient {
  private final Http http;
  private final ConnectionPoolSettings pool;
  private final LoggingAdapter log;
  /** Parsed engine URLs by endpoint, then path. */
  private final Map<String, Map<String, Uri>> uris = new ConcurrentHashMap<>();

  EngineClient(ActorSystem<?> system, FrontSettings settings) {
    this.http = Http.get(Adapter.toClassic(system));
    Duration longest = max(settings.firstTokenTimeout(), settings.responseTimeout(), settings.idleTimeout());
    Config config = ConfigFactory.parseMap(Map.of(
            "pekko.http.host-connection-pool.max-connections", settings.engineMaxConnections(),
            "pekko.http.host-connection-pool.max-open-requests", settings.engineMaxOpenRequests(),
            "pekko.http.host-connection-pool.max-retries", 0,
            "pekko.http.host-connection-pool.idle-timeout", settings.engineIdleTimeout().toMillis() + "ms",
            // the entity is subscribed as soon as the response arrives; a stuck one fails after this
            "pekko.http.host-connection-pool.response-entity-subscription-timeout", "5s",
            "pekko.http.client.connecting-timeout", settings.connectTimeout().toMillis() + "ms",
            // the front's own timeouts govern a request; the connection's must not cut a silent wait for a token
            "pekko.http.client.idle-timeout", longest.plusSeconds(30).toMillis() + "ms",
            "pekko.http.client.parsing.max-content-length", "infinite",
            "pekko.http.client.user-agent-header", "kvrouter-front"))
        .withFallback(system.settings().config());
    this.pool = ConnectionPoolSettings.create(config);
    this.log = Adapter.toClassic(system).log();
  }

  /** Sends {@code request} to its engine; the response's entity must be consumed or cancelled by the caller. */
  CompletionStage<HttpResponse> send(HttpRequest request) {
    return http.singleRequest(request, http.defaultClientHttpsContext(), pool, log);
  }

  /**
   * The engine's URL for {@code path}: an endpoint registered as {@code host:port} is taken as plain HTTP. Parsed once
   * per (endpoint, path): a request looks its URL up.
   */
  Uri uri(String endpoint, String path) {
    Map<String, Uri> paths = uris.get(endpoint);
    if (paths == null) {
      paths = uris.computeIfAbsent(endpoint, e -> new ConcurrentHashMap<>());
    }
    Uri uri = paths.get(path);
    if (uri == null) {
      uri = paths.computeIfAbsent(path, p -> Uri.create(baseUrl(endpoint) + p));
    }
    return uri;
  }

  private static String baseUrl(String endpoint) {
    String trimmed = endpoint.endsWith("/") ? endpoint.substring(0, endpoint.length() - 1) : endpoint;
    return trimmed.contains("://") ? trimmed : "http://" + trimmed;
  }

  /** Forgets the URLs of endpoints no worker has any more. */
  void retainEndpoints(java.util.Set<String> endpoints) {
    uris.keySet().retainAll(endpoints);
  }

  private static Duration max(Duration... durations) {
    Duration out = Duration.ZERO;
    for (Duration d : durations) {
      if (d.compareTo(out) > 0) {
        out = d;
      }
    }
    return out;
  }
}
