package io.kvrouter.front.request;

import io.kvrouter.core.model.SessionMode;
import java.util.Map;

/**
 * One OpenAI-style request as the front routes it, with no transport types: the endpoint, the body's {@code model},
 * whether it streams, the parsed body (for tokenizing; the engine gets the original bytes), and what the headers
 * asked for.
 *
 * @param clientRequestId the client's {@code x-request-id}, or null
 * @param session the session key, or null
 * @param priority higher is served first when the model's admission queue holds Books
 * @param global book in the least-loaded region's pool instead of this node's region
 * @param explain the response names the pick in {@link FrontHeaders#EXPLAIN}
 * @param strictPriority the admission queue's strict tier ({@link FrontHeaders#STRICT_PRIORITY}), default 0
 * @param policyClass the admission queue class or family ({@link FrontHeaders#POLICY_CLASS}), default empty
 * @param sessionMode the session affinity mode asked for ({@link FrontHeaders#SESSION_MODE}), default the model's
 */
public record ClientRequest(Endpoint endpoint, String model, boolean stream, Map<String, Object> body,
    String clientRequestId, String session, int priority, boolean global, boolean explain, int strictPriority,
    String policyClass, SessionMode sessionMode) {

  public ClientRequest {
    sessionMode = sessionMode == null ? SessionMode.DEFAULT : sessionMode;
  }

  /** A request in the model's session mode. */
  public ClientRequest(Endpoint endpoint, String model, boolean stream, Map<String, Object> body,
      String clientRequestId, String session, int priority, boolean global, boolean explain, int strictPriority,
      String policyClass) {
    this(endpoint, model, stream, body, clientRequestId, session, priority, global, explain, strictPriority,
        policyClass, SessionMode.DEFAULT);
  }
}
