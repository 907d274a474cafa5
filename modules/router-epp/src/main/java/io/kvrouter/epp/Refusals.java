package io.kvrouter.epp;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.front.FrontError;

/**
 * The picker's answers to refused requests, as GIE's protocol wants them: no endpoint 503, overload (a full queue,
 * every worker overloaded, a queue wait past its deadline) 429, a bad body 400, an unknown model 404 (as the model
 * server itself answers one), a body over the limit 413. The body is the front's OpenAI error object; its
 * {@code code} is also the {@link EppHeaders#REASON} header.
 */
final class Refusals {
  static final String BODY_TOO_LARGE = FrontError.BODY_TOO_LARGE;
  static final String UNSUPPORTED_PROCESSING_MODE = "UNSUPPORTED_PROCESSING_MODE";
  static final String NO_USABLE_ENDPOINT = "NO_USABLE_ENDPOINT";

  private Refusals() {}

  static FrontError of(RoutingError error, long retryAfterSeconds) {
    FrontError front = FrontError.of(error, retryAfterSeconds);
    String reason = error.reason();
    boolean overload = RoutingError.ALL_WORKERS_OVERLOADED.equals(reason) || RoutingError.QUEUE_LIMIT.equals(reason)
        || RoutingError.QUEUE_DEADLINE_EXCEEDED.equals(reason) || error.code() == RoutingError.Code.RESOURCE_EXHAUSTED;
    if (overload) {
      return withStatus(front, 429, FrontError.RATE_LIMIT, retryAfterSeconds);
    }
    if (front.status() == 504 || front.status() == 503) {
      return withStatus(front, 503, FrontError.UNAVAILABLE, retryAfterSeconds);
    }
    return front;
  }

  static FrontError noEndpoint(String message, long retryAfterSeconds) {
    return new FrontError(503, FrontError.UNAVAILABLE, RoutingError.NO_ENDPOINTS, message, null, retryAfterSeconds);
  }

  static FrontError tooLarge(long limit) {
    return new FrontError(413, FrontError.INVALID_REQUEST, BODY_TOO_LARGE, "the request body exceeds the limit of "
        + limit + " bytes", null, 0);
  }

  static FrontError unsupportedMode(String message) {
    return new FrontError(500, FrontError.INTERNAL, UNSUPPORTED_PROCESSING_MODE, message, null, 0);
  }

  private static FrontError withStatus(FrontError error, int status, String type, long retryAfterSeconds) {
    return new FrontError(status, type, error.code(), error.message(), error.param(), retryAfterSeconds);
  }
}
