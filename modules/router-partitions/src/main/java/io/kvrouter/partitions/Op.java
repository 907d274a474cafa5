package io.kvrouter.partitions;

/**
 * One client call as the history records it (Jepsen's invocation and completion in one record): who called which
 * node, when it was invoked and when it completed (milliseconds since the run started, on the harness's monotonic
 * clock), and what it returned.
 *
 * @param index position in the history, in completion order
 * @param process the calling client loop (or "fleet", "final")
 * @param node the node the call went to (1-based)
 * @param f what was called
 * @param requestId the booking's request id (empty for Select)
 * @param attemptIn the fencing attempt the call carried (Release, MarkPrefillDone, Renew), else 0
 * @param regionIn the BookingRef region the call carried, else empty
 * @param global whether a Book or Select had scope GLOBAL
 * @param invokeMs when the call was sent
 * @param completeMs when its answer (or failure) arrived
 * @param type OK (answered), FAIL (refused: it changed nothing) or INFO (outcome unknown: timeout, lost connection)
 * @param attempt the booking's attempt (Book OK)
 * @param worker the booked or selected worker
 * @param region the booking's or selection's region
 * @param replay Book OK: the answer was an existing booking again
 * @param applied fenced call OK: whether it changed anything
 * @param error FAIL or INFO: the gRPC status and the kvrouter-reason, e.g. "UNAVAILABLE ALL_WORKERS_OVERLOADED"
 */
public record Op(long index, String process, int node, F f, String requestId, long attemptIn, String regionIn,
    boolean global, double invokeMs, double completeMs, Type type, long attempt, String worker, String region,
    boolean replay, boolean applied, String error) {

  public enum F { BOOK, PREFILL, RELEASE, SELECT }

  public enum Type { OK, FAIL, INFO }

  /** The booking a fenced call names, or a Book OK made: region, request id, attempt. */
  public BookingKey key() {
    return f == F.BOOK ? new BookingKey(region, requestId, attempt) : new BookingKey(regionIn, requestId, attemptIn);
  }

  public boolean ok() {
    return type == Type.OK;
  }

  /** One history line, as the checker prints it. */
  public String line() {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format("%10.3fs %10.3fs  n%d  %-9s %-7s %s", invokeMs / 1000, completeMs / 1000, node, process,
        f.name().toLowerCase(), requestId));
    if (f != F.BOOK && f != F.SELECT) {
      sb.append(" attempt=").append(attemptIn);
    }
    if (global) {
      sb.append(" (global)");
    }
    sb.append("  -> ").append(type);
    if (type == Type.OK) {
      switch (f) {
        case BOOK -> sb.append(" attempt=").append(attempt).append(" worker=").append(region).append('/')
            .append(worker).append(replay ? " replay" : "");
        case SELECT -> sb.append(" worker=").append(region).append('/').append(worker);
        default -> sb.append(" applied=").append(applied);
      }
    } else {
      sb.append(' ').append(error);
    }
    return sb.toString();
  }
}
