package io.kvrouter.front;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvrouter.core.error.RoutingError;
import java.nio.charset.StandardCharsets;

/**
 * An error as the front answers it: an HTTP status and OpenAI's error object
 * ({@code {"error": {"message", "type", "param", "code"}}}), with {@code Retry-After} for retryable overload.
 * {@code code} is kvrouter's machine-readable reason (e.g. {@code QUEUE_LIMIT}, {@code UNKNOWN_MODEL}).
 */
public record FrontError(int status, String type, String code, String message, String param,
    long retryAfterSeconds) {

  public static final String INVALID_REQUEST = "invalid_request_error";
  public static final String NOT_FOUND = "not_found_error";
  public static final String RATE_LIMIT = "rate_limit_error";
  public static final String UNAVAILABLE = "service_unavailable_error";
  public static final String TIMEOUT = "timeout_error";
  public static final String UPSTREAM = "upstream_error";
  public static final String INTERNAL = "internal_error";

  /** Reasons of the front's own (beside router-core's {@link RoutingError} reasons). */
  public static final String MALFORMED_JSON = "MALFORMED_JSON";
  public static final String INVALID_BODY = "INVALID_BODY";
  public static final String MISSING_MODEL = "MISSING_MODEL";
  public static final String BODY_TOO_LARGE = "BODY_TOO_LARGE";
  public static final String BODY_TIMEOUT = "BODY_TIMEOUT";
  public static final String UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE";
  public static final String INVALID_HEADER = "INVALID_HEADER";
  public static final String HEADERS_TOO_LARGE = "HEADERS_TOO_LARGE";
  public static final String TEMPLATE_REJECTED = "TEMPLATE_REJECTED";
  public static final String TOKENIZER_BUSY = "TOKENIZER_BUSY";
  public static final String ENGINE_FAILED = "ENGINE_FAILED";
  public static final String ENGINE_TIMEOUT = "ENGINE_TIMEOUT";
  public static final String NOT_FOUND_PATH = "NOT_FOUND";
  public static final String METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED";
  public static final String INTERNAL_ERROR = "INTERNAL";

  private static final ObjectMapper JSON = new ObjectMapper();

  public static FrontError badRequest(String code, String message) {
    return new FrontError(400, INVALID_REQUEST, code, message, null, 0);
  }

  public static FrontError badRequest(String code, String message, String param) {
    return new FrontError(400, INVALID_REQUEST, code, message, param, 0);
  }

  public FrontException toException() {
    return new FrontException(this);
  }

  /** The body: OpenAI's error object. */
  public byte[] json() {
    ObjectNode root = JSON.createObjectNode();
    ObjectNode error = root.putObject("error");
    error.put("message", message);
    error.put("type", type);
    if (param == null) {
      error.putNull("param");
    } else {
      error.put("param", param);
    }
    error.put("code", code);
    return root.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** The same object as one SSE event, which ends a stream that failed after its first byte. */
  public byte[] sseEvent() {
    byte[] json = json();
    byte[] out = new byte[json.length + 8];
    System.arraycopy("data: ".getBytes(StandardCharsets.US_ASCII), 0, out, 0, 6);
    System.arraycopy(json, 0, out, 6, json.length);
    out[out.length - 2] = '\n';
    out[out.length - 1] = '\n';
    return out;
  }

  /**
   * A rejection of router-core as a client expects it: malformed 400, unknown model 404, no capacity 503 (with
   * Retry-After), queue limit 429 (with Retry-After), deadline 504.
   */
  public static FrontError of(RoutingError error, long retryAfterSeconds) {
    String message = error.message();
    String code = error.reason() == null ? error.code().name() : error.reason();
    return switch (error.code()) {
      case INVALID_ARGUMENT -> new FrontError(400, INVALID_REQUEST, code, message, null, 0);
      case NOT_FOUND -> new FrontError(404, NOT_FOUND, code, message, "model", 0);
      case FAILED_PRECONDITION -> RoutingError.MODEL_NOT_IN_REGION.equals(error.reason())
          ? new FrontError(404, NOT_FOUND, code, message, "model", 0)
          : new FrontError(400, INVALID_REQUEST, code, message, null, 0);
      case RESOURCE_EXHAUSTED -> new FrontError(429, RATE_LIMIT, code, message, null, retryAfterSeconds);
      case UNAVAILABLE -> new FrontError(503, UNAVAILABLE, code, message, null, retryAfterSeconds);
      case DEADLINE_EXCEEDED -> new FrontError(504, TIMEOUT, code, message, null, 0);
      case UNAUTHENTICATED -> new FrontError(401, INVALID_REQUEST, code, message, null, 0);
      case PERMISSION_DENIED -> new FrontError(403, INVALID_REQUEST, code, message, null, 0);
      case ALREADY_EXISTS -> new FrontError(409, INVALID_REQUEST, code, message, null, 0);
    };
  }
}
