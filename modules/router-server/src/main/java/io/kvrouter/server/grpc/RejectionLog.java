package io.kvrouter.server.grpc;

import io.kvrouter.api.Stages;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs bad input: request bodies the transport rejected (malformed, too large) and calls rejected as
 * INVALID_ARGUMENT. One line at most per interval, without a stack trace, with the count of rejections not logged
 * since: a client that sends garbage in a loop costs a line a second, not a line per call. A line carries the reason
 * and the status message, which quotes at most {@link RoutingError#MAX_ECHO} characters of a name or id and never a
 * request's token ids or block hashes.
 */
final class RejectionLog {
  private static final Logger log = LoggerFactory.getLogger(RejectionLog.class);
  private static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final AtomicLong nextLogAt = new AtomicLong(System.nanoTime());
  private static final AtomicLong suppressed = new AtomicLong();

  private RejectionLog() {}

  /** A request body the transport rejected. */
  static void rejected(String reason, String message) {
    log("a request body", reason, message);
  }

  /** A call of {@code method} that failed: logged if it was rejected as INVALID_ARGUMENT. */
  static void invalidArgument(String method, Throwable failure) {
    if (Stages.unwrap(failure) instanceof RoutingException routing
        && routing.error().code() == RoutingError.Code.INVALID_ARGUMENT) {
      log(method, routing.error().reason(), routing.error().message());
    }
  }

  private static void log(String what, String reason, String message) {
    long now = System.nanoTime();
    long next = nextLogAt.get();
    if (now - next < 0 || !nextLogAt.compareAndSet(next, now + INTERVAL_NANOS)) {
      suppressed.incrementAndGet();
      return;
    }
    long skipped = suppressed.getAndSet(0);
    if (log.isInfoEnabled()) {
      log.info("rejected {}: {} {}{}", what, reason, message,
          skipped == 0 ? "" : " (" + skipped + " more rejections of bad input not logged)");
    }
  }
}
