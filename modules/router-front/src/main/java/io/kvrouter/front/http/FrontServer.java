package io.kvrouter.front.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.front.FrontError;
import io.kvrouter.front.FrontException;
import io.kvrouter.front.FrontSettings;
import io.kvrouter.front.request.ClientRequest;
import io.kvrouter.front.request.Endpoint;
import io.kvrouter.front.request.FrontHeaders;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.apache.pekko.util.ByteString;

/**
 * The front's HTTP server (Pekko HTTP, HTTP/1.1 and h2c on one port): {@code POST /v1/chat/completions} and
 * {@code POST /v1/completions} ({@link Forwarding}), {@code GET /v1/models} (the models with registered workers) and
 * {@code GET /health}. The body is read up to the limit within the body timeout (413, 408), parsed with bounds (400),
 * and only then does anything get booked.
 */
final class FrontServer {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final FrontContext ctx;
  private final BooleanSupplier healthy;

  FrontServer(FrontContext ctx, BooleanSupplier healthy) {
    this.ctx = ctx;
    this.healthy = healthy;
  }

  /** Binds the server; settings from {@code kvrouter.front} on top of the system's pekko.http.server. */
  CompletionStage<ServerBinding> bind(ActorSystem<?> system) {
    FrontSettings s = ctx.settings();
    Config config = ConfigFactory.parseMap(Map.of(
            "pekko.http.server.enable-http2", "on",
            // the front's own timeouts (body, first token, idle) govern a request; this would cut a long stream
            "pekko.http.server.request-timeout", "infinite",
            "pekko.http.server.idle-timeout", s.connectionIdleTimeout().toMillis() + "ms",
            "pekko.http.server.max-connections", s.maxConnections(),
            "pekko.http.server.server-header", "",
            "pekko.http.server.parsing.max-content-length", Long.toString(s.maxBodyBytes()),
            "pekko.http.server.parsing.max-header-count", s.maxHeaderCount(),
            "pekko.http.server.parsing.max-header-value-length", Long.toString(s.maxHeaderValueLength()),
            "pekko.http.server.parsing.error-handler", ParsingErrors.class.getName()))
        .withFallback(system.settings().config());
    ServerSettings settings = ServerSettings.create(config);
    return Http.get(Adapter.toClassic(system)).newServerAt(s.host(), s.port()).withSettings(settings)
        .bind(this::handle);
  }

  CompletionStage<HttpResponse> handle(HttpRequest request) {
    long arrival = System.nanoTime();
    String path = request.getUri().path();
    Endpoint endpoint = Endpoint.of(path);
    if (endpoint != null) {
      if (request.method() != HttpMethods.POST) {
        return discarding(request, errorResponse(new FrontError(405, FrontError.INVALID_REQUEST,
            FrontError.METHOD_NOT_ALLOWED, path + " takes POST", null, 0), null));
      }
      return completion(endpoint, request, arrival);
    }
    if (path.equals("/v1/models") && request.method() == HttpMethods.GET) {
      return discarding(request, models());
    }
    if (path.equals("/health") && request.method() == HttpMethods.GET) {
      return discarding(request, healthy.getAsBoolean() ? HttpResponse.create().withStatus(StatusCodes.OK)
          : errorResponse(new FrontError(503, FrontError.UNAVAILABLE, "NOT_READY", "this node is not serving yet",
              null, 1), null));
    }
    return discarding(request, errorResponse(new FrontError(404, FrontError.NOT_FOUND, FrontError.NOT_FOUND_PATH,
        "no route for " + request.method().value() + " " + io.kvrouter.core.error.RoutingError.echo(path), null, 0),
        null));
  }

  private CompletionStage<HttpResponse> completion(Endpoint endpoint, HttpRequest request, long arrival) {
    var type = request.entity().getContentType();
    if (!type.mediaType().equals(ContentTypes.APPLICATION_JSON.mediaType())
        && !type.equals(ContentTypes.NO_CONTENT_TYPE)) {
      ctx.metrics().refused(endpoint.path(), 400);
      return discarding(request, errorResponse(FrontError.badRequest(FrontError.UNSUPPORTED_MEDIA_TYPE,
          "the body must be application/json, got " + type), null));
    }
    FrontSettings s = ctx.settings();
    var declared = request.entity().getContentLengthOption();
    if (declared.isPresent() && declared.getAsLong() > s.maxBodyBytes()) {
      ctx.metrics().refused(endpoint.path(), 413);
      logRefused(endpoint, tooLarge(s), request, arrival);
      HttpResponse response = errorResponse(tooLarge(s), header(request, FrontHeaders.REQUEST_ID));
      if (!request.protocol().value().startsWith("HTTP/1")) {
        return CompletableFuture.completedFuture(response); // HTTP/2 resets the stream by itself
      }
      HttpResponse closing = response.addHeader(
          org.apache.pekko.http.javadsl.model.headers.Connection.create("close"));
      if (declared.getAsLong() > s.refusedBodyDrainBytes()) {
        return CompletableFuture.completedFuture(closing);
      }
      // a socket closed with unread bytes answers the writing client with a reset, which it may read before the 413
      return request.entity().withoutSizeLimit().getDataBytes()
          .completionTimeout(s.bodyTimeout())
          .runWith(org.apache.pekko.stream.javadsl.Sink.ignore(), ctx.materializer())
          .handle((done, failure) -> failure == null ? response : closing);
    }
    ctx.metrics().started();
    // a body that arrived whole with its headers is strict already: no stream to run for it
    CompletionStage<? extends org.apache.pekko.http.javadsl.model.HttpEntity.Strict> read =
        request.entity().isStrict() && request.entity().getContentLengthOption().orElse(0) <= s.maxBodyBytes()
            ? CompletableFuture.completedFuture((org.apache.pekko.http.javadsl.model.HttpEntity.Strict) request.entity())
            : request.entity().withSizeLimit(s.maxBodyBytes()).toStrict(s.bodyTimeout().toMillis(), s.maxBodyBytes(),
                ctx.materializer());
    // a body read by toStrict completes on a stream's thread: parsing and routing go on there (the common pool,
    // where a plain continuation of Pekko's stage would run, costs a thread hand-off per request)
    return read
        .thenComposeAsync(strict -> {
          ByteString body = strict.getData();
          ClientRequest parsed = ctx.parser().parse(endpoint, body.toArray(), name -> header(request, name));
          return new Forwarding(ctx, parsed, body, request, arrival).run();
        }, Runnable::run)
        .exceptionally(failure -> {
          Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
              ? failure.getCause() : failure;
          FrontError error;
          if (cause instanceof FrontException front) {
            error = front.error();
          } else if (cause instanceof EntityStreamSizeException
              || String.valueOf(cause.getMessage()).startsWith("Request too large")) {
            error = tooLarge(s);
          } else if (cause instanceof java.util.concurrent.TimeoutException) {
            error = new FrontError(408, FrontError.INVALID_REQUEST, FrontError.BODY_TIMEOUT, "the body did not "
                + "arrive within " + s.bodyTimeout().toMillis() + " ms", null, 0);
          } else {
            error = FrontError.badRequest(FrontError.INVALID_BODY, "the body could not be read: "
                + io.kvrouter.core.error.RoutingError.truncate(String.valueOf(cause.getMessage()), 200));
          }
          // Forwarding counts and logs the requests it ran; these never reached it
          ctx.metrics().finished(null, endpoint.path(), error.status());
          logRefused(endpoint, error, request, arrival);
          return errorResponse(error, header(request, FrontHeaders.REQUEST_ID));
        });
  }

  /** The access-log line of a request refused before it was parsed (no model, no booking). */
  private void logRefused(Endpoint endpoint, FrontError error, HttpRequest request, long arrival) {
    if (ctx.accessLog().enabled()) {
      ctx.accessLog().write(new AccessLog.Entry("POST", endpoint.path(), error.status(), null, null, null, 0, -1,
          (System.nanoTime() - arrival) / 1_000, 0, header(request, FrontHeaders.REQUEST_ID), null, null,
          error.code()));
    }
  }

  private static FrontError tooLarge(FrontSettings s) {
    return new FrontError(413, FrontError.INVALID_REQUEST, FrontError.BODY_TOO_LARGE, "the body exceeds "
        + s.maxBodyBytes() + " bytes", null, 0);
  }

  private static String header(HttpRequest request, String name) {
    Optional<HttpHeader> header = request.getHeader(name);
    return header.map(HttpHeader::value).orElse(null);
  }

  /** Answers without reading the body: drained, so a keep-alive connection can carry the next request. */
  private CompletionStage<HttpResponse> discarding(HttpRequest request, HttpResponse response) {
    request.discardEntityBytes(ctx.materializer());
    return CompletableFuture.completedFuture(response);
  }

  private HttpResponse models() {
    ObjectNode root = JSON.createObjectNode();
    root.put("object", "list");
    ArrayNode data = root.putArray("data");
    long created = System.currentTimeMillis() / 1000;
    for (String model : ctx.cluster().models()) {
      ObjectNode entry = data.addObject();
      entry.put("id", model);
      entry.put("object", "model");
      entry.put("created", created);
      entry.put("owned_by", "kvrouter");
      // vLLM lists a LoRA adapter it serves as a model whose parent is the base model
      for (String adapter : io.kvrouter.front.routing.LoraAdapters.of(ctx.cluster().view(model))) {
        ObjectNode lora = data.addObject();
        lora.put("id", adapter);
        lora.put("object", "model");
        lora.put("created", created);
        lora.put("owned_by", "kvrouter");
        lora.put("parent", model);
      }
    }
    return HttpResponse.create().withStatus(StatusCodes.OK)
        .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, root.toString()));
  }

  /** An OpenAI error object with its status (and Retry-After when the error says when to come back). */
  static HttpResponse errorResponse(FrontError error, String requestId) {
    List<HttpHeader> headers = new ArrayList<>(2);
    if (error.retryAfterSeconds() > 0) {
      headers.add(RawHeader.create("Retry-After", Long.toString(error.retryAfterSeconds())));
    }
    if (requestId != null) {
      headers.add(RawHeader.create(FrontHeaders.REQUEST_ID, requestId));
    }
    return HttpResponse.create().withStatus(error.status()).withHeaders(headers)
        .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, ByteString.fromArray(error.json())));
  }

  static InetSocketAddress address(ServerBinding binding) {
    return binding.localAddress();
  }
}
