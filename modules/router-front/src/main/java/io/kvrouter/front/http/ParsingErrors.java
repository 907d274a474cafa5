package io.kvrouter.front.http;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.front.FrontError;
import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.ParsingErrorHandler;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCode;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;

/**
 * Requests Pekko HTTP refuses before the front sees them (headers over the limits, a malformed request line, a URI
 * too long) answered as OpenAI error objects like every other error of the front. Loaded by Pekko HTTP by name
 * ({@code pekko.http.server.parsing.error-handler}).
 */
public final class ParsingErrors extends ParsingErrorHandler {
  @Override
  public HttpResponse handle(StatusCode status, ErrorInfo info, LoggingAdapter log, ServerSettings settings) {
    String summary = info.summary();
    // Pekko answers too many headers with 400: it is a header limit all the same (RFC 6585, 431)
    int code = status.intValue() == 400 && summary.contains("header") && summary.contains("limit") ? 431
        : status.intValue();
    String reason = switch (code) {
      case 431 -> FrontError.HEADERS_TOO_LARGE;
      case 413 -> FrontError.BODY_TOO_LARGE;
      default -> "MALFORMED_REQUEST";
    };
    String message = RoutingError.truncate(summary, 300);
    return FrontServer.errorResponse(new FrontError(code, FrontError.INVALID_REQUEST, reason, message, null, 0), null)
        .addHeader(org.apache.pekko.http.javadsl.model.headers.Connection.create("close"));
  }
}
