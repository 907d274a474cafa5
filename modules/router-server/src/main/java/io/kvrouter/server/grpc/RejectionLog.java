package io.kvrouter.server.grpc;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs request bodies the transport rejected (malformed, too large): one line at most per interval, without a
 * stack trace, with the count of rejections not logged since. A client that sends garbage in a loop costs a line a
 * second, not a line per call.
 */
final class RejectionLog {
  private static final Logger log = LoggerFactory.getLogger(RejectionLog.class);
  private static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final AtomicLong nextLogAt = new AtomicLong(System.nanoTime());
  private static final AtomicLong suppressed = new AtomicLong();

  private RejectionLog() {}

  static void rejected(String reason, String message) {
    long now = System.nanoTime();
    long next = nextLogAt.get();
    if (now - next < 0 || !nextLogAt.compareAndSet(next, now + INTERVAL_NANOS)) {
      suppressed.incrementAndGet();
      return;
    }
    long skipped = suppressed.getAndSet(0);
    if (log.isInfoEnabled()) {
      log.info("rejected a request body: {} {}{}", reason, message,
          skipped == 0 ? "" : " (" + skipped + " more rejected bodies not logged)");
    }
  }
}
