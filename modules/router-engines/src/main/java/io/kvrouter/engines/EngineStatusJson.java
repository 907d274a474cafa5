package io.kvrouter.engines;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvrouter.engines.placement.StatusBoard;
import java.util.List;

/**
 * Engine statuses as JSON for the management routes: each {@code EngineStatus} with its record components as
 * lowerCamelCase keys (as the routes' protobuf JSON), plus {@code stale} (not heard of for three status intervals)
 * and {@code ageMs} (since this node heard of it).
 */
public final class EngineStatusJson {
  private static final ObjectMapper JSON = new ObjectMapper();

  private EngineStatusJson() {}

  public static ArrayNode render(List<StatusBoard.Seen> statuses, long nowMillis) {
    ArrayNode array = JSON.createArrayNode();
    for (StatusBoard.Seen seen : statuses) {
      ObjectNode node = JSON.valueToTree(seen.status());
      node.put("stale", seen.stale());
      node.put("ageMs", Math.max(0, nowMillis - seen.receivedAtMillis()));
      array.add(node);
    }
    return array;
  }

  public static String toJson(ArrayNode array) {
    return array.toString();
  }
}
