package io.kvrouter.front.request;

/** The headers the front reads and writes (root README, "The HTTP front"). */
public final class FrontHeaders {
  private FrontHeaders() {}

  /** Request: the client's id for the request; echoed in the response (generated when absent). */
  public static final String REQUEST_ID = "x-request-id";
  /**
   * Request: a session key, logged with the request and bound to the worker its Book goes to (README "Session
   * affinity"); the first of {@link #SESSIONS} that is set.
   */
  public static final String SESSION = "x-kvrouter-session";
  /** Request: the session key as OpenCode and other agents send it. */
  public static final String SESSION_ID = "x-session-id";
  /** Request: the session key as Dynamo's frontend reads it. */
  public static final String DYNAMO_SESSION_ID = "x-dynamo-session-id";
  /** The session headers, in the order they are read. */
  public static final java.util.List<String> SESSIONS = java.util.List.of(SESSION, SESSION_ID, DYNAMO_SESSION_ID);
  /** Request: {@code soft} or {@code hard} (default: the model's {@code session_mode}). */
  public static final String SESSION_MODE = "x-kvrouter-session-mode";
  /** Request: an integer priority (higher first in the admission queue), default 0. */
  public static final String PRIORITY = "x-kvrouter-priority";
  /** Request: the admission queue's strict-priority tier, 0 to 65,535 (a higher tier always leaves first), default 0. */
  public static final String STRICT_PRIORITY = "x-kvrouter-strict-priority";
  /** Request: the admission queue class or tenant family the request asks for (RouteRequest.policy_class). */
  public static final String POLICY_CLASS = "x-kvrouter-policy-class";
  /** Request: {@code region} (default: this node's region) or {@code global} (the least-loaded region's pool). */
  public static final String SCOPE = "x-kvrouter-scope";
  /** Request: {@code true} asks for {@link #EXPLAIN} in the response. */
  public static final String EXPLAIN_REQUEST = "x-kvrouter-explain";

  /** Response: the worker that served the request (the decode worker of a prefill/decode pair). */
  public static final String WORKER = "x-kvrouter-worker";
  /** Response: the prefill worker of a prefill/decode pair ({@link #WORKER} is then the decode worker). */
  public static final String PREFILL_WORKER = "x-kvrouter-prefill-worker";
  /** Response: the prefill worker's data-parallel rank. */
  public static final String PREFILL_DP_RANK = "x-kvrouter-prefill-dp-rank";
  /**
   * Response: what the Book did to the request's session binding, {@code bound}, {@code kept} or {@code rebound}
   * (absent without a session). Not {@link #SESSION}: that request header carries the session's key.
   */
  public static final String SESSION_OUTCOME = "x-kvrouter-session-outcome";
  /** Request: taints every worker must carry, comma-separated ({@code gpu=h100,zone=eu-1}). */
  public static final String REQUIRED_TAINTS = "x-kvrouter-required-taints";
  /** Request: taints preferred (a worker carrying all of them has its cost multiplied), comma-separated. */
  public static final String PREFERRED_TAINTS = "x-kvrouter-preferred-taints";
  /** Request: the preferred taints' cost multiplier, in [0, 1] (default 0.5). */
  public static final String PREFERRED_TAINT_MULTIPLIER = "x-kvrouter-preferred-taint-multiplier";
  /** Response: its data-parallel rank. */
  public static final String DP_RANK = "x-kvrouter-dp-rank";
  /** Response: the booking's request id (what GetModelState lists) and the attempts the request took. */
  public static final String BOOKING_ID = "x-kvrouter-booking-id";
  public static final String ATTEMPTS = "x-kvrouter-attempts";
  /** Response, on request: the pick (policy, cost, overlap, cached tokens, queue wait, excluded workers). */
  public static final String EXPLAIN = "x-kvrouter-explain";
  /** Sent to the engine: vLLM's header that pins a data-parallel rank (the booked one). */
  public static final String DATA_PARALLEL_RANK = "X-data-parallel-rank";
}
