package io.kvrouter.sim.server;

/**
 * An error answered as vLLM answers it: HTTP status and the body {@code {"error": {"message", "type", "param",
 * "code"}}} (vllm/entrypoints/serve/engine/protocol.py ErrorResponse). {@code type} is "BadRequestError" for vLLM's
 * own validation errors, "Bad Request" for request-schema errors (FastAPI's RequestValidationError), "NotFoundError"
 * for an unknown model, the status phrase for HTTP-level errors.
 */
public final class ApiException extends RuntimeException {
  private final int status;
  private final String type;
  private final String param;

  public ApiException(int status, String type, String message, String param) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
  }

  /** vLLM's VLLMValidationError: message suffixed with "(parameter=..., value=...)" as its __str__ does. */
  public static ApiException validation(String message, String parameter, Object value) {
    StringBuilder text = new StringBuilder(message);
    if (parameter != null || value != null) {
      text.append(" (");
      if (parameter != null) {
        text.append("parameter=").append(parameter);
      }
      if (value != null) {
        text.append(parameter != null ? ", " : "").append("value=").append(value);
      }
      text.append(')');
    }
    return new ApiException(400, "BadRequestError", text.toString(), parameter);
  }

  /** FastAPI's request-schema error (pydantic), as vLLM's validation handler renders it. */
  public static ApiException schema(String field, String errorType, String message, Object input) {
    String loc = field == null ? "body" : "body." + field;
    String detail = "{'type': '" + errorType + "', 'loc': '" + loc + "', 'msg': '" + message + "'"
        + (input == null ? "" : ", 'input': " + pythonRepr(input)) + "}";
    return new ApiException(400, "Bad Request", "1 validation error:\n  " + detail, loc);
  }

  private static String pythonRepr(Object input) {
    String text = input instanceof String s ? "'" + s + "'" : String.valueOf(input);
    return text.length() > 200 ? text.substring(0, 200) + "...[truncated]" : text;
  }

  public int status() {
    return status;
  }

  public String type() {
    return type;
  }

  public String param() {
    return param;
  }
}
