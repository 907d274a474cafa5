package io.kvrouter.server.management;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.concat;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onComplete;
import static org.apache.pekko.http.javadsl.server.Directives.parameterOptional;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import io.kvrouter.api.Stages;
import io.kvrouter.api.v1.ModelList;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.server.grpc.Explanations;
import io.kvrouter.server.grpc.ModelStates;
import io.kvrouter.server.grpc.ProtoMapping;
import java.util.List;
import io.kvrouter.core.selection.RequestLimits;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;

/**
 * Read-only management routes over each model's admission state, read through its actor:
 * {@code GET /models} lists models with registered workers; {@code GET /models/state?model=NAME} and
 * {@code GET /models/NAME} (NAME URL-encoded, or a plain path such as {@code org/name}) show one model's state;
 * {@code GET /models/explain?model=NAME[&limit=N]} its last decisions ({@link Explanations});
 * {@code GET /models/pools?model=NAME} lists the model's pool in every region this node heard of (a JSON array of
 * PoolSummary, by region name; a model no region has workers for: 404).
 */
public final class ModelRoutes implements ManagementRouteProvider {
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(5);
  private static final JsonFormat.Printer JSON = JsonFormat.printer().includingDefaultValueFields();

  private final ExtendedActorSystem system;

  public ModelRoutes(ExtendedActorSystem system) {
    this.system = system;
  }

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    RouterCluster cluster = RouterCluster.get(Adapter.toTyped(system));
    return pathPrefix("models", () -> get(() -> concat(
        pathEndOrSingleSlash(() -> json(StatusCodes.OK,
            ModelList.newBuilder().addAllModels(cluster.models()).build())),
        path("state", () -> parameterOptional("model", model -> modelState(cluster, model))),
        path("explain", () -> parameterOptional("model", model -> parameterOptional("limit",
            limit -> explain(cluster, model, limit)))),
        path("pools", () -> parameterOptional("model", model -> pools(cluster, model.orElse("")))),
        path(PathMatchers.remaining(), encoded -> modelState(cluster,
            Optional.of(decodePath(encoded)))))));
  }

  /** Percent-decodes a path segment; unlike in a query string, '+' in a path is a plus sign, not a space. */
  static String decodePath(String encoded) {
    return URLDecoder.decode(encoded.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  private Route modelState(RouterCluster cluster, Optional<String> model) {
    return answer(ModelStates.read(cluster, ModelStates.Breakers.of(Adapter.toTyped(system)), model.orElse(""),
        READ_TIMEOUT), json -> EngineStates.withEngines(json, Adapter.toTyped(system), model.orElse("")));
  }

  /** The model's last decisions ({@link Explanations}); a limit that is not a number from 0 up: 400. */
  private Route explain(RouterCluster cluster, Optional<String> model, Optional<String> limit) {
    int parsed;
    try {
      parsed = limit.map(Integer::parseInt).orElse(0);
    } catch (NumberFormatException e) {
      parsed = -1;
    }
    if (parsed < 0) {
      return error(RoutingError.invalid(RoutingError.INVALID_SIZE,
          "limit must be a whole number from 0 (all kept) up, got '" + RoutingError.echo(limit.orElse("")) + "'"));
    }
    return answer(Explanations.read(cluster, model.orElse(""), parsed, READ_TIMEOUT));
  }

  private Route answer(CompletionStage<? extends MessageOrBuilder> read) {
    return answer(read, json -> json);
  }

  /** As {@link #answer(CompletionStage)}, the JSON of a successful read passed through {@code decorate}. */
  private Route answer(CompletionStage<? extends MessageOrBuilder> read,
      java.util.function.UnaryOperator<String> decorate) {
    return onComplete(read, result -> {
      if (result.isSuccess()) {
        return complete(HttpResponse.create().withStatus(StatusCodes.OK)
            .withEntity(ContentTypes.APPLICATION_JSON, decorate.apply(print(result.get()))));
      }
      Throwable cause = Stages.unwrap(result.failed().get());
      if (cause instanceof RoutingException routing) {
        return error(routing.error());
      }
      return complete(StatusCodes.SERVICE_UNAVAILABLE, "admission actor unavailable: " + cause.getMessage());
    });
  }

  private static Route pools(RouterCluster cluster, String model) {
    try {
      RequestLimits.requireModel(model);
    } catch (RoutingException e) {
      return error(e.error());
    }
    List<io.kvrouter.api.v1.PoolSummary> pools = ProtoMapping.pools(cluster.regions(), model);
    if (pools.isEmpty()) {
      return error(RoutingError.notFound(RoutingError.UNKNOWN_MODEL,
          "no region has workers for model '" + RoutingError.echo(model) + "'"));
    }
    StringBuilder json = new StringBuilder("[");
    for (io.kvrouter.api.v1.PoolSummary pool : pools) {
      json.append(json.length() > 1 ? "," : "").append(print(pool));
    }
    return complete(HttpResponse.create().withStatus(StatusCodes.OK)
        .withEntity(ContentTypes.APPLICATION_JSON, json.append(']').toString()));
  }

  private static Route error(RoutingError error) {
    StatusCode status = switch (error.code()) {
      case INVALID_ARGUMENT -> StatusCodes.BAD_REQUEST;
      case NOT_FOUND -> StatusCodes.NOT_FOUND;
      default -> StatusCodes.SERVICE_UNAVAILABLE;
    };
    return complete(HttpResponse.create().withStatus(status)
        .withEntity(ContentTypes.APPLICATION_JSON, jsonError(error)));
  }

  private static String jsonError(RoutingError error) {
    com.google.gson.JsonObject object = new com.google.gson.JsonObject();
    object.addProperty("code", error.code().name());
    object.addProperty("reason", error.reason());
    object.addProperty("message", error.message());
    return object.toString();
  }

  private static Route json(StatusCode status, MessageOrBuilder message) {
    return complete(HttpResponse.create().withStatus(status)
        .withEntity(ContentTypes.APPLICATION_JSON, print(message)));
  }

  private static String print(MessageOrBuilder message) {
    try {
      return JSON.print(message);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);
    }
  }
}
