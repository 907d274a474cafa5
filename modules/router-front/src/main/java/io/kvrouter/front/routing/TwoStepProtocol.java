package io.kvrouter.front.routing;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The request bodies of vLLM's two-step prefill/decode protocol (the one vLLM's
 * {@code tests/v1/kv_connector/nixl_integration/toy_proxy_server.py} drives against engines running a KV connector
 * such as NIXL): the prefill engine is asked for one output token, not streamed, with {@code kv_transfer_params}
 * saying a remote engine decodes; it answers with the {@code kv_transfer_params} the decode engine needs to pull the
 * prompt's KV (its engine id, block ids, host and port, ...), which the decode request carries with the client's body
 * otherwise unchanged. No transport in it: maps as Jackson reads and writes JSON objects.
 */
public final class TwoStepProtocol {
  private TwoStepProtocol() {}

  /** The field both requests and the prefill's answer carry. */
  public static final String KV_TRANSFER_PARAMS = "kv_transfer_params";

  /**
   * The prefill request for the client's {@code body}: {@code kv_transfer_params} asking for a remote decode,
   * {@code stream} false, one output token ({@code max_tokens}, and {@code max_completion_tokens} when the client
   * sent it), no {@code stream_options} (refused without streaming) and no {@code min_tokens} /
   * {@code min_completion_tokens} (a minimum above one contradicts the single token).
   */
  public static Map<String, Object> prefillBody(Map<String, Object> body) {
    Map<String, Object> out = new LinkedHashMap<>(body);
    Map<String, Object> params = new LinkedHashMap<>();
    params.put("do_remote_decode", true);
    params.put("do_remote_prefill", false);
    params.put("remote_engine_id", null);
    params.put("remote_block_ids", null);
    params.put("remote_host", null);
    params.put("remote_port", null);
    out.put(KV_TRANSFER_PARAMS, params);
    out.put("stream", false);
    out.put("max_tokens", 1);
    if (out.containsKey("max_completion_tokens")) {
      out.put("max_completion_tokens", 1);
    }
    out.remove("stream_options");
    out.remove("min_tokens");
    out.remove("min_completion_tokens");
    return out;
  }

  /**
   * The {@code kv_transfer_params} object of the prefill engine's answer, or null when it has none (an engine
   * without a KV connector: the decode engine then computes the prompt itself).
   */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> transferParams(Object prefillAnswer) {
    if (prefillAnswer instanceof Map<?, ?> answer && answer.get(KV_TRANSFER_PARAMS) instanceof Map<?, ?> params
        && !params.isEmpty()) {
      return (Map<String, Object>) params;
    }
    return null;
  }

  /** The decode request: the client's {@code body} with the prefill's {@code params} (null: the body unchanged). */
  public static Map<String, Object> decodeBody(Map<String, Object> body, Map<String, Object> params) {
    if (params == null) {
      return body;
    }
    Map<String, Object> out = new LinkedHashMap<>(body);
    out.put(KV_TRANSFER_PARAMS, params);
    return out;
  }
}
