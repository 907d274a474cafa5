package io.kvrouter.epp;

import java.util.Locale;

/**
 * The names of GIE's Endpoint Picker Protocol and of the control headers the picker reads (root README, "Behind a
 * Gateway API gateway").
 */
public final class EppHeaders {
  private EppHeaders() {}

  /** Request header and {@code envoy.lb} metadata key: the picked endpoint, {@code ip:port} (or a fallback list). */
  public static final String DESTINATION = "x-gateway-destination-endpoint";
  /** Data plane → picker, in {@code envoy.lb} metadata of the response phase: the endpoint that served. */
  public static final String SERVED = "x-gateway-destination-endpoint-served";
  /** Data plane → picker, in {@code envoy.lb.subset_hint} metadata: the only endpoints the picker may choose. */
  public static final String SUBSET = "x-gateway-destination-endpoint-subset";
  /** Dynamic metadata namespace of the picked endpoint (and of the served one). */
  public static final String LB_NAMESPACE = "envoy.lb";
  /** Filter metadata namespace of the subset hint. */
  public static final String SUBSET_NAMESPACE = "envoy.lb.subset_hint";

  /** The InferenceObjective a request names (its priority), and the older name of the header. */
  public static final String OBJECTIVE = "x-llm-d-inference-objective";
  public static final String OBJECTIVE_LEGACY = "x-gateway-inference-objective";
  /** The fairness class a request names, and the older name of the header. */
  public static final String FAIRNESS = "x-llm-d-inference-fairness-id";
  public static final String FAIRNESS_LEGACY = "x-gateway-inference-fairness-id";

  /**
   * Picker → decode pod, for a prefill/decode pair: the prefill pod's {@code ip:port}, which llm-d's routing sidecar
   * on the decode pod sends the prefill to before its own engine decodes (llm-d-inference-scheduler's
   * {@code routing.PrefillEndpointHeader}).
   */
  public static final String PREFILLER = "x-prefiller-host-port";

  /** Response of a refused request: kvrouter's reason code (the body is an OpenAI error object naming it too). */
  public static final String REASON = "x-kvrouter-reason";

  /**
   * The headers the gateway must not forward to the model server: the control headers above, the destination
   * headers and the prefill header (a client never chooses its own endpoints: the picker overwrites or removes
   * them), and kvrouter's own request headers.
   */
  public static boolean isControlHeader(String name) {
    String lower = name.toLowerCase(Locale.ROOT);
    return lower.equals(OBJECTIVE) || lower.equals(OBJECTIVE_LEGACY) || lower.equals(FAIRNESS)
        || lower.equals(FAIRNESS_LEGACY) || lower.startsWith(DESTINATION) || lower.equals(PREFILLER)
        || lower.startsWith("x-kvrouter-");
  }
}
