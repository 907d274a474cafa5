package io.kvrouter.server.management;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.kvrouter.engines.EngineStatusJson;
import io.kvrouter.engines.Engines;
import org.apache.pekko.actor.typed.ActorSystem;

/** The engine connectors of a model (router-engines' status board) added to its management state as {@code engines}. */
final class EngineStates {
  private EngineStates() {}

  static String withEngines(String modelStateJson, ActorSystem<?> system, String model) {
    Engines engines = Engines.get(system);
    if (engines == null) {
      return modelStateJson;
    }
    var statuses = engines.board().forModel(model);
    if (statuses.isEmpty()) {
      return modelStateJson;
    }
    JsonObject state = JsonParser.parseString(modelStateJson).getAsJsonObject();
    state.add("engines", JsonParser.parseString(EngineStatusJson.toJson(
        EngineStatusJson.render(statuses, System.currentTimeMillis()))));
    return state.toString();
  }
}
