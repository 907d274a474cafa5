package io.kvrouter.server.management;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvrouter.engines.EngineStatusJson;
import io.kvrouter.engines.Engines;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;

/**
 * {@code GET /engines}: every engine connector of the region as this node knows it ({@code engines}, the statuses
 * also in each model's state), the engines this node's own sources list ({@code listed}) and their problems
 * ({@code problems}: entries left out of the engines file, pods that are not engines).
 */
public final class EngineRoutes implements ManagementRouteProvider {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final ExtendedActorSystem system;

  public EngineRoutes(ExtendedActorSystem system) {
    this.system = system;
  }

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    return path("engines", () -> get(() -> {
      Engines engines = Engines.get(Adapter.toTyped(system));
      ObjectNode body = JSON.createObjectNode();
      if (engines != null) {
        body.set("engines", EngineStatusJson.render(engines.board().all(), System.currentTimeMillis()));
        var listed = body.putArray("listed");
        engines.sources().engines().forEach((key, spec) -> listed.addObject().put("model", key.model())
            .put("workerId", key.workerId()).put("origin", spec.origin()));
        body.set("problems", JSON.valueToTree(engines.sources().problems()));
      }
      return complete(HttpResponse.create().withStatus(StatusCodes.OK)
          .withEntity(ContentTypes.APPLICATION_JSON, body.toString()));
    }));
  }
}
