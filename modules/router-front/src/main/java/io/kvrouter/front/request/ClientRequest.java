package io.kvrouter.front.request;

import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.selection.Disaggregation;
import java.util.List;
import java.util.Map;

/**
 * One OpenAI-style request as the front routes it, with no transport types: the endpoint, the model it books for,
 * whether it streams, the parsed body (for tokenizing; the engine gets the original bytes), and what the headers
 * asked for.
 *
 * @param model the model the request books for: the body's {@code model}, or the base model of the LoRA adapter
 *     the body names ({@link #forAdapter})
 * @param clientRequestId the client's {@code x-request-id}, or null
 * @param session the session key, or null
 * @param priority higher is served first when the model's admission queue holds Books
 * @param global book in the least-loaded region's pool instead of this node's region
 * @param explain the response names the pick in {@link FrontHeaders#EXPLAIN}
 * @param strictPriority the admission queue's strict tier ({@link FrontHeaders#STRICT_PRIORITY}), default 0
 * @param policyClass the admission queue class or family ({@link FrontHeaders#POLICY_CLASS}), default empty
 * @param sessionMode the session affinity mode asked for ({@link FrontHeaders#SESSION_MODE}), default the model's
 * @param requiredTaints taints every candidate worker must carry ({@link FrontHeaders#REQUIRED_TAINTS}), as sent
 * @param preferredTaints taints whose carriers' cost is multiplied ({@link FrontHeaders#PREFERRED_TAINTS}), as sent
 * @param preferredTaintMultiplier that multiplier, or null (the default)
 * @param loraName the LoRA adapter the request runs with ("" for the base model)
 * @param disaggregation how the Book uses prefill and decode workers: the HTTP front drives vLLM's two-step
 *     protocol and books {@link Disaggregation#AUTO}; a transport forwarding to one engine books AGGREGATED
 */
public record ClientRequest(Endpoint endpoint, String model, boolean stream, Map<String, Object> body,
    String clientRequestId, String session, int priority, boolean global, boolean explain, int strictPriority,
    String policyClass, SessionMode sessionMode, List<String> requiredTaints, List<String> preferredTaints,
    Double preferredTaintMultiplier, String loraName, Disaggregation disaggregation) {

  public ClientRequest {
    sessionMode = sessionMode == null ? SessionMode.DEFAULT : sessionMode;
    requiredTaints = requiredTaints == null ? List.of() : requiredTaints;
    preferredTaints = preferredTaints == null ? List.of() : preferredTaints;
    loraName = loraName == null ? "" : loraName;
    disaggregation = disaggregation == null ? Disaggregation.AGGREGATED : disaggregation;
  }

  /** A request of no placement constraint and no adapter, booked aggregated. */
  public ClientRequest(Endpoint endpoint, String model, boolean stream, Map<String, Object> body,
      String clientRequestId, String session, int priority, boolean global, boolean explain, int strictPriority,
      String policyClass, SessionMode sessionMode) {
    this(endpoint, model, stream, body, clientRequestId, session, priority, global, explain, strictPriority,
        policyClass, sessionMode, List.of(), List.of(), null, "", Disaggregation.AGGREGATED);
  }

  /** A request in the model's session mode. */
  public ClientRequest(Endpoint endpoint, String model, boolean stream, Map<String, Object> body,
      String clientRequestId, String session, int priority, boolean global, boolean explain, int strictPriority,
      String policyClass) {
    this(endpoint, model, stream, body, clientRequestId, session, priority, global, explain, strictPriority,
        policyClass, SessionMode.DEFAULT);
  }

  /** This request booked for {@code baseModel} with the LoRA adapter {@code adapter} (the body unchanged). */
  public ClientRequest forAdapter(String baseModel, String adapter) {
    return new ClientRequest(endpoint, baseModel, stream, body, clientRequestId, session, priority, global, explain,
        strictPriority, policyClass, sessionMode, requiredTaints, preferredTaints, preferredTaintMultiplier, adapter,
        disaggregation);
  }

  /**
   * This request with the admission queue's {@code priority} and {@code policyClass} (a transport that maps its own
   * headers onto them: the endpoint picker's objective and fairness id), everything else kept.
   */
  public ClientRequest withPriority(int priority, String policyClass) {
    return new ClientRequest(endpoint, model, stream, body, clientRequestId, session, priority, global, explain,
        strictPriority, policyClass, sessionMode, requiredTaints, preferredTaints, preferredTaintMultiplier, loraName,
        disaggregation);
  }

  /** This request booked as {@code mode} says. */
  public ClientRequest withDisaggregation(Disaggregation mode) {
    return new ClientRequest(endpoint, model, stream, body, clientRequestId, session, priority, global, explain,
        strictPriority, policyClass, sessionMode, requiredTaints, preferredTaints, preferredTaintMultiplier, loraName,
        mode);
  }
}
