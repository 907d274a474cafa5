package io.kvrouter.sim.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** The engine server's one JSON mapper and its error body. */
final class JsonSupport {
  static final ObjectMapper MAPPER = new ObjectMapper();

  private JsonSupport() {}

  /** vLLM's ErrorResponse: {@code {"error": {"message", "type", "param", "code"}}}. */
  static ObjectNode error(ApiException e) {
    ObjectNode body = MAPPER.createObjectNode();
    ObjectNode error = body.putObject("error");
    error.put("message", e.getMessage());
    error.put("type", e.type());
    if (e.param() == null) {
      error.putNull("param");
    } else {
      error.put("param", e.param());
    }
    error.put("code", e.status());
    return body;
  }
}
