package io.kvrouter.tokenizer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds a request's {@link RoutingPrompt} from its OpenAI-style JSON body (parsed into maps and lists), as the
 * engine will see the prompt:
 *
 * <ul>
 *   <li>chat ({@code /v1/chat/completions}): the model's chat template renders {@code messages} with
 *       {@code add_generation_prompt} (default true), {@code tools}, {@code documents} and
 *       {@code chat_template_kwargs}; the text is encoded with {@code add_special_tokens} (default false: the
 *       template holds BOS). Without a tokenizer, without a template, or with one that fails here
 *       ({@link TemplateException.Kind#UNSUPPORTED}), approximate mode over the chat's canonical text;</li>
 *   <li>completions ({@code /v1/completions}): {@code prompt} as a string (encoded with {@code add_special_tokens},
 *       default true), a list of strings, a list of token ids (used as they are, as vLLM does) or a list of such
 *       lists; without a tokenizer, approximate mode over the text (token-id prompts need no tokenizer).</li>
 * </ul>
 *
 * {@code cache_salt} in the body salts approximate and batch hashes as the router salts token ids (pass it on as
 * RouteRequest's {@code cache_salt} too). A body that is not a valid request throws {@link TemplateException}
 * with {@link TemplateException.Kind#INVALID_INPUT}; a template's {@code raise_exception},
 * {@link TemplateException.Kind#REJECTED}: both are client errors (400).
 */
public final class RoutingPrompts {
  private RoutingPrompts() {}

  public static RoutingPrompt chat(ModelTokenizers.Model model, Map<String, Object> body, int blockSize,
                                   String loraName) {
    Object messages = body.get("messages");
    if (!(messages instanceof List<?> list) || list.isEmpty()) {
      throw invalid("'messages' must be a non-empty list");
    }
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> conversation = (List<Map<String, Object>>) list;
    String salt = string(body, "cache_salt");
    ModelTokenizer tokenizer = model == null ? null : model.tokenizer();
    ChatTemplate template = tokenizer == null ? null : tokenizer.chatTemplate();
    String reason = tokenizer == null ? "no tokenizer" : "no chat template";
    if (template != null) {
      Map<String, Object> extra = new LinkedHashMap<>();
      Object kwargs = body.get("chat_template_kwargs");
      if (kwargs instanceof Map<?, ?> map) {
        map.forEach((k, v) -> extra.put(String.valueOf(k), v));
      } else if (kwargs != null) {
        throw invalid("'chat_template_kwargs' must be an object");
      }
      if (body.get("tools") != null) {
        extra.put("tools", body.get("tools"));
      }
      if (body.get("documents") != null) {
        extra.put("documents", body.get("documents"));
      }
      boolean generationPrompt = bool(body, "add_generation_prompt", true);
      try {
        String prompt = template.render(conversation, generationPrompt, extra);
        return RoutingPrompt.ofTokens(tokenizer.encode(prompt, bool(body, "add_special_tokens", false)));
      } catch (TemplateException e) {
        if (e.isClientError()) {
          throw e;
        }
        reason = e.getMessage();
      }
    }
    return RoutingPrompt.approximate(RoutingPrompt.canonicalChatText(conversation, body.get("tools")), blockSize,
        salt, loraName, reason);
  }

  public static RoutingPrompt completion(ModelTokenizers.Model model, Map<String, Object> body, int blockSize,
                                         String loraName) {
    Object prompt = body.get("prompt");
    String salt = string(body, "cache_salt");
    ModelTokenizer tokenizer = model == null ? null : model.tokenizer();
    boolean special = bool(body, "add_special_tokens", true);
    List<Object> prompts = new ArrayList<>();
    if (prompt instanceof String) {
      prompts.add(prompt);
    } else if (prompt instanceof List<?> list && !list.isEmpty()) {
      if (list.get(0) instanceof Number) {
        prompts.add(list); // one prompt of token ids
      } else {
        prompts.addAll(list);
      }
    } else {
      throw invalid("'prompt' must be a string, a list of strings, a list of token ids or a list of such lists");
    }
    List<int[]> encoded = new ArrayList<>(prompts.size());
    boolean textOnly = true;
    for (Object p : prompts) {
      if (p instanceof String s) {
        encoded.add(tokenizer == null ? null : tokenizer.encode(s, special));
      } else if (p instanceof List<?> ids && !ids.isEmpty()) {
        textOnly = false;
        encoded.add(tokenIds(ids));
      } else {
        throw invalid("every prompt must be a non-empty string or list of token ids");
      }
    }
    if (tokenizer == null && textOnly) {
      // GIE's estimate concatenates nothing for a batch: the first prompt carries the affinity, all carry the load
      RoutingPrompt first = RoutingPrompt.approximate((String) prompts.get(0), blockSize, salt, loraName,
          "no tokenizer");
      if (prompts.size() == 1) {
        return first;
      }
      StringBuilder text = new StringBuilder(); // the batch's text, as one (its pseudo-tokens count the load)
      for (Object p : prompts) {
        text.append((String) p);
      }
      int total = RoutingPrompt.pseudoTokens(text.toString()).length;
      return new RoutingPrompt(null, first.blockHashes(), Math.max(total, first.islTokens()), true, "no tokenizer");
    }
    if (encoded.contains(null)) {
      throw invalid("a batch mixing text and token-id prompts needs the model's tokenizer");
    }
    return RoutingPrompt.batch(encoded, blockSize, salt, loraName);
  }

  private static int[] tokenIds(List<?> ids) {
    int[] out = new int[ids.size()];
    for (int i = 0; i < out.length; i++) {
      if (!(ids.get(i) instanceof Number n) || n instanceof Double || n instanceof Float || n.longValue() < 0
          || n.longValue() > 0xffffffffL) {
        throw invalid("token ids must be integers in [0, 2^32)");
      }
      out[i] = (int) n.longValue();
    }
    return out;
  }

  private static String string(Map<String, Object> body, String key) {
    Object value = body.get(key);
    if (value == null) {
      return null;
    }
    if (!(value instanceof String s)) {
      throw invalid("'" + key + "' must be a string");
    }
    return s;
  }

  private static boolean bool(Map<String, Object> body, String key, boolean otherwise) {
    Object value = body.get(key);
    if (value == null) {
      return otherwise;
    }
    if (!(value instanceof Boolean b)) {
      throw invalid("'" + key + "' must be a boolean");
    }
    return b;
  }

  private static TemplateException invalid(String message) {
    return new TemplateException(TemplateException.Kind.INVALID_INPUT, message);
  }
}
