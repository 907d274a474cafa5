package io.kvrouter.sim.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A /v1/completions or /v1/chat/completions body, validated as vLLM validates it (vllm/entrypoints/openai/
 * completion/protocol.py and chat_completion/protocol.py, 0.33.0): fields of the wrong type answer vLLM's request
 * schema error, vLLM's own checks its validation errors, with vLLM's messages. Sampling fields the simulation has no
 * use for (temperature, top_p, stop, ...) are accepted and ignored; fields it cannot honour answer 400 naming them.
 */
record GenerationRequest(
    boolean chat,
    String model,
    List<int[]> prompts,
    List<Map<String, Object>> messages,
    Integer maxTokens,
    int minTokens,
    boolean ignoreEos,
    int n,
    boolean stream,
    boolean includeUsage,
    boolean continuousUsage,
    boolean returnTokenIds,
    boolean addSpecialTokens,
    boolean addGenerationPrompt,
    String requestId,
    ObjectNode kvTransferParams) {

  /** Fields vLLM supports that the simulated engine does not: a request using them answers 400. */
  private static final List<String> UNSUPPORTED = List.of("echo", "logprobs", "top_logprobs", "prompt_logprobs",
      "use_beam_search", "prompt_embeds", "suffix", "tools", "response_format", "structured_outputs");

  static GenerationRequest parse(JsonNode body, boolean chat, PromptTokenizer tokenizer) {
    if (body == null || !body.isObject()) {
      throw ApiException.schema(null, "model_attributes_type",
          "Input should be a valid dictionary or object to extract fields from", body == null ? null : body.toString());
    }
    ObjectNode o = (ObjectNode) body;
    String model = optionalString(o, "model");
    for (String field : UNSUPPORTED) {
      JsonNode value = o.get(field);
      if (value != null && !value.isNull() && !(value.isBoolean() && !value.asBoolean())
          && !(value.isContainerNode() && value.isEmpty())
          && !(value.isIntegralNumber() && value.asInt() == 0 && !field.equals("logprobs"))) {
        throw ApiException.validation("`" + field + "` is not supported by the simulated engine.", field, null);
      }
    }
    boolean stream = optionalBoolean(o, "stream", false);
    JsonNode streamOptions = o.get("stream_options");
    boolean includeUsage = false;
    boolean continuousUsage = false;
    if (streamOptions != null && !streamOptions.isNull()) {
      if (!streamOptions.isObject()) {
        throw ApiException.schema("stream_options", "model_type", "Input should be a valid dictionary or instance of "
            + "StreamOptions", streamOptions.toString());
      }
      if (!stream) {
        throw ApiException.validation("Stream options can only be defined when `stream=True`.", "stream_options",
            null);
      }
      includeUsage = optionalBoolean((ObjectNode) streamOptions, "include_usage", false);
      continuousUsage = includeUsage && optionalBoolean((ObjectNode) streamOptions, "continuous_usage_stats", false);
    }
    Integer maxTokens = optionalInt(o, chat && o.hasNonNull("max_completion_tokens") ? "max_completion_tokens"
        : "max_tokens");
    if (!chat && maxTokens == null) {
      maxTokens = 16; // CompletionRequest.max_tokens default; a null is normalized to it
    }
    String maxTokensParam = chat && o.hasNonNull("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (maxTokens != null && maxTokens < 1) {
      throw ApiException.validation("max_tokens must be at least 1, got " + maxTokens + ".", maxTokensParam,
          maxTokens);
    }
    Integer minTokensValue = optionalInt(o, "min_tokens");
    int minTokens = minTokensValue == null ? 0 : minTokensValue;
    if (minTokens < 0) {
      throw ApiException.validation("min_tokens must be greater than or equal to 0, got " + minTokens + ".", null,
          null);
    }
    if (maxTokens != null && minTokens > maxTokens) {
      throw ApiException.validation("min_tokens must be less than or equal to max_tokens=" + maxTokens + ", got "
          + minTokens + ".", null, null);
    }
    Integer nValue = optionalInt(o, "n");
    int n = nValue == null ? 1 : nValue;
    if (n < 1) {
      throw ApiException.validation("n must be at least 1, got " + n + ".", "n", n);
    }
    boolean ignoreEos = optionalBoolean(o, "ignore_eos", false);
    boolean returnTokenIds = optionalBoolean(o, "return_token_ids", false);
    boolean addSpecialTokens = optionalBoolean(o, "add_special_tokens", !chat);
    boolean addGenerationPrompt = optionalBoolean(o, "add_generation_prompt", true);
    String requestId = optionalString(o, "request_id");

    List<int[]> prompts = new ArrayList<>();
    List<Map<String, Object>> messages = null;
    if (chat) {
      JsonNode list = o.get("messages");
      if (list == null || list.isNull()) {
        throw ApiException.schema("messages", "missing", "Field required", null);
      }
      if (!list.isArray()) {
        throw ApiException.schema("messages", "list_type", "Input should be a valid list", list.toString());
      }
      messages = new ArrayList<>();
      for (JsonNode message : list) {
        if (!message.isObject() || !message.hasNonNull("role")) {
          throw ApiException.schema("messages", "missing", "Field required: each message needs a role",
              message.toString());
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> m = JsonSupport.MAPPER.convertValue(message, Map.class);
        messages.add(m);
      }
      try {
        prompts.add(tokenizer.encodeChat(messages, addGenerationPrompt, Map.of()));
      } catch (PromptTokenizer.Unsupported e) {
        throw ApiException.validation(e.getMessage(), "messages", null);
      }
    } else {
      JsonNode prompt = o.get("prompt");
      if (prompt == null || prompt.isNull() || (prompt.isTextual() && prompt.asText().isEmpty())) {
        throw ApiException.validation("Either prompt or prompt_embeds must be provided and non-empty.", "prompt",
            null);
      }
      try {
        prompts.addAll(prompts(prompt, tokenizer, addSpecialTokens));
      } catch (PromptTokenizer.Unsupported e) {
        throw ApiException.validation(e.getMessage(), "prompt", null);
      }
    }
    for (int[] ids : prompts) {
      for (int id : ids) {
        if (id >= tokenizer.vocabularySize()) {
          throw ApiException.validation("Token id " + id + " is out of vocabulary", "prompt", null);
        }
      }
    }
    return new GenerationRequest(chat, model, prompts, messages, maxTokens, minTokens, ignoreEos, n, stream,
        includeUsage, continuousUsage, returnTokenIds, addSpecialTokens, addGenerationPrompt, requestId,
        kvTransferParams(o));
  }

  /** vLLM's {@code kv_transfer_params} (a KV connector's request fields): an object, or null when absent. */
  private static ObjectNode kvTransferParams(ObjectNode o) {
    JsonNode value = o.get("kv_transfer_params");
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isObject()) {
      throw ApiException.schema("kv_transfer_params", "dict_type", "Input should be a valid dictionary",
          value.toString());
    }
    return (ObjectNode) value;
  }

  /** A prefill for a remote decode (vLLM's two-step protocol, first step). */
  boolean prefillForRemoteDecode() {
    return kvTransferParams != null && kvTransferParams.path("do_remote_decode").asBoolean(false);
  }

  /** A decode of KV a prefill engine computed (the second step). */
  boolean decodeOfRemotePrefill() {
    return kvTransferParams != null && kvTransferParams.path("do_remote_prefill").asBoolean(false);
  }

  /** prompt: a string, a list of strings, a list of token ids, or a list of such lists. */
  private static List<int[]> prompts(JsonNode prompt, PromptTokenizer tokenizer, boolean addSpecialTokens) {
    List<int[]> prompts = new ArrayList<>();
    if (prompt.isTextual()) {
      prompts.add(tokenizer.encodePrompt(prompt.asText(), addSpecialTokens));
      return prompts;
    }
    if (!prompt.isArray() || prompt.isEmpty()) {
      throw ApiException.schema("prompt", "list_type", "Input should be a valid list of integers, a list of lists "
          + "of integers, a string or a list of strings", prompt.toString());
    }
    JsonNode first = prompt.get(0);
    if (first.isIntegralNumber()) {
      prompts.add(tokenIds(prompt, "prompt"));
      return prompts;
    }
    if (prompt.size() > 2048) {
      throw ApiException.validation("prompt list length " + prompt.size() + " exceeds the maximum allowed count of "
          + "2048. To increase this limit, set the VLLM_MAX_COMPLETION_PROMPTS environment variable.", "prompt", null);
    }
    Iterator<JsonNode> items = prompt.elements();
    int index = 0;
    while (items.hasNext()) {
      JsonNode item = items.next();
      if (item.isArray() && !item.isEmpty()) {
        prompts.add(tokenIds(item, "prompt." + index));
      } else if (item.isTextual() && !first.isArray()) {
        prompts.add(tokenizer.encodePrompt(item.asText(), addSpecialTokens));
      } else {
        throw ApiException.schema("prompt." + index, "list_type", "Input should be a valid list of integers or a "
            + "string", item.toString());
      }
      index++;
    }
    return prompts;
  }

  private static int[] tokenIds(JsonNode list, String field) {
    int[] ids = new int[list.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode id = list.get(i);
      if (!id.isIntegralNumber() || !id.canConvertToInt()) {
        throw ApiException.schema(field + "." + i, "int_type", "Input should be a valid integer", id.toString());
      }
      if (id.asInt() < 0) {
        throw ApiException.schema(field + "." + i, "greater_than_equal", "Input should be greater than or equal to 0",
            id.asInt());
      }
      ids[i] = id.asInt();
    }
    return ids;
  }

  private static String optionalString(ObjectNode o, String field) {
    JsonNode value = o.get(field);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isTextual()) {
      throw ApiException.schema(field, "string_type", "Input should be a valid string", value.toString());
    }
    return value.asText();
  }

  private static boolean optionalBoolean(ObjectNode o, String field, boolean fallback) {
    JsonNode value = o.get(field);
    if (value == null || value.isNull()) {
      return fallback;
    }
    if (!value.isBoolean()) {
      throw ApiException.schema(field, "bool_type", "Input should be a valid boolean", value.toString());
    }
    return value.asBoolean();
  }

  private static Integer optionalInt(ObjectNode o, String field) {
    JsonNode value = o.get(field);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isIntegralNumber() || !value.canConvertToInt()) {
      throw ApiException.schema(field, "int_type", "Input should be a valid integer", value.toString());
    }
    return value.asInt();
  }
}
