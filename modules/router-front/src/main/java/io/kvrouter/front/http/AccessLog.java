package io.kvrouter.front.http;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * One line per request the front answered, on logger {@code io.kvrouter.front.access} at INFO: the line itself in
 * text, and its fields as MDC entries, which the JSON log format ({@code KVROUTER_LOG_FORMAT=json}) writes as fields
 * of the line's object. Never a prompt or an answer.
 */
final class AccessLog {
  private static final Logger log = LoggerFactory.getLogger("io.kvrouter.front.access");

  /** One request's line. */
  record Entry(String method, String path, int status, String model, String worker,
      String prefillWorker, int attempts, long ttftMicros,
      long durationMicros, long bytesOut, String clientRequestId, String session, String bookingId, String outcome) {}

  private static final String[] KEYS = {"http_method", "http_path", "http_status", "model", "worker", "prefill_worker",
      "attempts",
      "ttft_us", "duration_us", "bytes_out", "request_id", "session", "booking_id", "outcome"};

  boolean enabled() {
    return log.isInfoEnabled();
  }

  void write(Entry e) {
    if (!log.isInfoEnabled()) {
      return;
    }
    MDC.put("http_method", e.method());
    MDC.put("http_path", e.path());
    MDC.put("http_status", Integer.toString(e.status()));
    MDC.put("model", e.model() == null ? "" : e.model());
    MDC.put("worker", e.worker() == null ? "" : e.worker());
    MDC.put("prefill_worker", e.prefillWorker() == null ? "" : e.prefillWorker());
    MDC.put("attempts", Integer.toString(e.attempts()));
    MDC.put("ttft_us", Long.toString(e.ttftMicros()));
    MDC.put("duration_us", Long.toString(e.durationMicros()));
    MDC.put("bytes_out", Long.toString(e.bytesOut()));
    MDC.put("request_id", e.clientRequestId() == null ? "" : e.clientRequestId());
    MDC.put("session", e.session() == null ? "" : e.session());
    MDC.put("booking_id", e.bookingId() == null ? "" : e.bookingId());
    MDC.put("outcome", e.outcome());
    try {
      log.info("{} {} {} model={} worker={} prefill_worker={} attempts={} ttft_us={} duration_us={} bytes={} request_id={} "
              + "session={} booking_id={} outcome={}", e.method(), e.path(), e.status(), e.model(), e.worker(),
          e.prefillWorker() == null ? "-" : e.prefillWorker(), e.attempts(), e.ttftMicros(), e.durationMicros(), e.bytesOut(), e.clientRequestId(), e.session(),
          e.bookingId(), e.outcome());
    } finally {
      for (String key : KEYS) {
        MDC.remove(key);
      }
    }
  }
}
