package io.kvrouter.core.error;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A rejection with a status (mapped 1:1 onto a gRPC status at the edge), a machine-readable reason and a message.
 * A plain record so it can travel in actor replies. {@code details}: machine-readable facts about the rejection,
 * each sent as a {@code kvrouter-<key>} trailer (a queue limit: {@link #DETAIL_POLICY_CLASS},
 * {@link #DETAIL_LIMIT_KIND}, {@link #DETAIL_LIMIT_CURRENT}, {@link #DETAIL_LIMIT}); empty for most.
 */
public record RoutingError(Code code, String reason, String message, Map<String, String> details) {

  public enum Code {
    INVALID_ARGUMENT,
    NOT_FOUND,
    ALREADY_EXISTS,
    FAILED_PRECONDITION,
    UNAVAILABLE,
    RESOURCE_EXHAUSTED,
    DEADLINE_EXCEEDED,
    UNAUTHENTICATED,
    PERMISSION_DENIED
  }

  public static final String EMPTY_MODEL = "EMPTY_MODEL";
  public static final String EMPTY_WORKER_ID = "EMPTY_WORKER_ID";
  public static final String EMPTY_REQUEST_ID = "EMPTY_REQUEST_ID";
  public static final String INVALID_SIZE = "INVALID_SIZE";
  public static final String INVALID_BLOCK_SIZE = "INVALID_BLOCK_SIZE";
  public static final String BLOCK_SIZE_MISMATCH = "BLOCK_SIZE_MISMATCH";
  public static final String TOO_MANY_TOKENS = "TOO_MANY_TOKENS";
  public static final String MALFORMED = "MALFORMED";
  public static final String UNKNOWN_POLICY = "UNKNOWN_POLICY";
  public static final String INVALID_POLICY_PARAMETER = "INVALID_POLICY_PARAMETER";
  public static final String UNKNOWN_MODEL = "UNKNOWN_MODEL";
  public static final String UNKNOWN_WORKER = "UNKNOWN_WORKER";
  public static final String WORKER_CONFIG_CONFLICT = "WORKER_CONFIG_CONFLICT";
  public static final String PINNED_WORKER_NOT_ALLOWED = "PINNED_WORKER_NOT_ALLOWED";
  public static final String NO_ENDPOINTS = "NO_ENDPOINTS";
  public static final String ALL_WORKERS_OVERLOADED = "ALL_WORKERS_OVERLOADED";
  public static final String PINNED_WORKER_OVERLOADED = "PINNED_WORKER_OVERLOADED";
  public static final String QUEUE_LIMIT = "QUEUE_LIMIT";
  /** A Book asked for aggregation on a model with no aggregated worker (e.g. decode and prefill workers only). */
  public static final String NO_AGGREGATED_WORKERS = "NO_AGGREGATED_WORKERS";
  /** A disaggregated Book on a model with no prefill worker. */
  public static final String NO_PREFILL_WORKERS = "NO_PREFILL_WORKERS";
  /** A Book on a model with no worker that can decode (prefill workers only), or a disaggregated one with none. */
  public static final String NO_DECODE_WORKERS = "NO_DECODE_WORKERS";
  /**
   * A request pinned a data-parallel rank without a worker, and no worker of the phase being chosen has that rank
   * among its ranks.
   */
  public static final String UNKNOWN_DP_RANK = "UNKNOWN_DP_RANK";
  /** The pinned worker serves another phase than the one the pin applies to. */
  public static final String PINNED_WORKER_ROLE = "PINNED_WORKER_ROLE";
  public static final String MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE";
  public static final String QUEUE_DEADLINE_EXCEEDED = "QUEUE_DEADLINE_EXCEEDED";
  public static final String ADMISSION_TIMEOUT = "ADMISSION_TIMEOUT";
  /** A Book whose caller had no more time left than the deadline margin: rejected before any ask. */
  public static final String DEADLINE_TOO_SHORT = "DEADLINE_TOO_SHORT";
  public static final String FIELD_TOO_LONG = "FIELD_TOO_LONG";
  public static final String TOO_MANY_RANKS = "TOO_MANY_RANKS";
  public static final String TOO_MANY_ITEMS = "TOO_MANY_ITEMS";
  public static final String UNKNOWN_ENUM_VALUE = "UNKNOWN_ENUM_VALUE";
  /** A worker's or a request's taint is not {@code key} or {@code key=value} of the allowed characters. */
  public static final String INVALID_TAINT = "INVALID_TAINT";
  /** No rank the request may reach carries every taint it requires. */
  public static final String REQUIRED_TAINTS_UNMET = "REQUIRED_TAINTS_UNMET";
  /**
   * UNAVAILABLE (retryable): a recovered admission state admits Books only to workers that reported load since it
   * started, and none has yet.
   */
  public static final String RECOVERING = "RECOVERING";
  /**
   * FAILED_PRECONDITION: a regional call (the default scope) for a model that has no workers in this node's region
   * while other regions have some; scope GLOBAL reaches them.
   */
  public static final String MODEL_NOT_IN_REGION = "MODEL_NOT_IN_REGION";
  /**
   * UNAVAILABLE (retryable): a call relayed to another region got no answer in time, or no member of that region is
   * in the cluster.
   */
  public static final String REGION_UNREACHABLE = "REGION_UNREACHABLE";
  /** UNAUTHENTICATED: auth is on and the call carried no bearer token. */
  public static final String MISSING_TOKEN = "MISSING_TOKEN";
  /** UNAUTHENTICATED: the call's bearer token is none of the configured ones. */
  public static final String UNKNOWN_TOKEN = "UNKNOWN_TOKEN";
  /** PERMISSION_DENIED: the call's token is known but lacks the role its service requires. */
  public static final String MISSING_ROLE = "MISSING_ROLE";

  /** Details of a QUEUE_LIMIT rejection: the class, the kind of limit, the usage it was compared at and the limit. */
  public static final String DETAIL_POLICY_CLASS = "policy-class";
  public static final String DETAIL_LIMIT_KIND = "limit-kind";
  public static final String DETAIL_LIMIT_CURRENT = "limit-current";
  public static final String DETAIL_LIMIT = "limit";

  public RoutingError {
    details = details == null || details.isEmpty() ? Map.of() : Map.copyOf(details);
  }

  public RoutingError(Code code, String reason, String message) {
    this(code, reason, message, Map.of());
  }

  /**
   * RESOURCE_EXHAUSTED QUEUE_LIMIT: the admission queue of {@code policyClass} holds {@code current} of
   * {@code limitKind} (requests, raw_isl_tokens, cached_tokens, max_pending) against {@code limit} ({@code how}: how
   * the limit was made, e.g. per worker × workers); the message and the details name all four.
   */
  public static RoutingError queueLimit(String policyClass, String limitKind, long current, long limit, String how) {
    Map<String, String> details = new LinkedHashMap<>();
    details.put(DETAIL_POLICY_CLASS, policyClass);
    details.put(DETAIL_LIMIT_KIND, limitKind);
    details.put(DETAIL_LIMIT_CURRENT, Long.toString(current));
    details.put(DETAIL_LIMIT, Long.toString(limit));
    return new RoutingError(Code.RESOURCE_EXHAUSTED, QUEUE_LIMIT, "policy class '" + policyClass + "' queue "
        + limitKind + " limit reached (current=" + current + ", limit=" + limit + ": " + how + ")", details);
  }

  /** The most characters of caller input that a message quotes (see {@link #echo}). */
  public static final int MAX_ECHO = 128;

  /**
   * Caller input as a message may quote it: at most {@link #MAX_ECHO} characters, then an ellipsis. Every message
   * that repeats a name, id or value goes through this, so a status never carries unbounded input (a long
   * grpc-message header breaks HTTP/2 clients and every other call on their connection).
   */
  public static String echo(String value) {
    return truncate(value, MAX_ECHO);
  }

  /** {@code text} cut to {@code max} characters (not splitting a surrogate pair), marked with an ellipsis. */
  public static String truncate(String text, int max) {
    if (text == null || text.length() <= max) {
      return text;
    }
    int end = Character.isHighSurrogate(text.charAt(max - 1)) ? max - 1 : max;
    return text.substring(0, end) + "...";
  }

  public static RoutingError invalid(String reason, String message) {
    return new RoutingError(Code.INVALID_ARGUMENT, reason, message);
  }

  public static RoutingError notFound(String reason, String message) {
    return new RoutingError(Code.NOT_FOUND, reason, message);
  }

  public static RoutingError unavailable(String reason, String message) {
    return new RoutingError(Code.UNAVAILABLE, reason, message);
  }

  public static RoutingError emptyModel() {
    return invalid(EMPTY_MODEL, "model must not be empty");
  }

  public static RoutingError unknownModel(String model) {
    return notFound(UNKNOWN_MODEL, "model '" + echo(model) + "' has no registered worker");
  }

  public RoutingException toException() {
    return new RoutingException(this);
  }
}
