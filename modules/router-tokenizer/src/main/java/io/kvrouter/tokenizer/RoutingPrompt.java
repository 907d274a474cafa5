package io.kvrouter.tokenizer;

import io.kvrouter.core.hashing.BlockHasher;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What the front sends the router for one request (RouteRequest's prompt): either the prompt's {@link #tokenIds}
 * ({@code token_ids}; the router hashes them), or {@link #blockHashes} (one local block hash per full block, as
 * RouteRequest's {@code block_hashes} defines them) with {@link #islTokens} (the prompt's length in tokens, at least
 * {@code blockHashes.length × blockSize}).
 *
 * <p>Block hashes are sent in two cases:
 * <ul>
 *   <li><b>approximate mode</b> (a model without a tokenizer, a template that cannot be rendered here, or content
 *       the template does not render for routing): the prompt's text (a completion's prompt, or a canonical text of
 *       the chat: tools as JSON, then each message's role and text) is cut into fixed chunks as GIE's tokenizer-free
 *       estimate does (llm-d-router {@code dataproducer/tokenizer/estimate.go}: UTF-8 bytes packed four to a
 *       pseudo-token, a block being {@code blockSize} pseudo-tokens), each full chunk hashed with router-core's
 *       {@link BlockHasher}. {@code islTokens} is the pseudo-token count (about one per four bytes, the usual
 *       characters-per-token of English text). These hashes never match an engine's KV events: they give prefix
 *       affinity through the router's approximate index (workers without KV events, fed by routing decisions);</li>
 *   <li><b>a batch of prompts</b> ({@code /v1/completions} with a list): the first prompt's local block hashes (its
 *       prefix is what the engine may have cached) with {@code islTokens} the total of all prompts (the load the
 *       batch puts on the engine).</li>
 * </ul>
 *
 * @param tokenIds the prompt's tokens, or null when {@code blockHashes} are sent
 * @param blockHashes local block hashes, or null when {@code tokenIds} are sent
 * @param islTokens the prompt's length in tokens (with token ids: their count)
 * @param approximate true when the hashes come from text (approximate mode)
 * @param reason why approximate mode was used (null otherwise)
 */
public record RoutingPrompt(int[] tokenIds, long[] blockHashes, int islTokens, boolean approximate, String reason) {
  /** Bytes of text per pseudo-token in approximate mode (GIE's {@code bytesPerToken}). */
  public static final int BYTES_PER_TOKEN = 4;

  public RoutingPrompt {
    if ((tokenIds == null) == (blockHashes == null)) {
      throw new IllegalArgumentException("exactly one of token ids and block hashes");
    }
    if (tokenIds != null && islTokens != tokenIds.length) {
      throw new IllegalArgumentException("isl_tokens must be the token count");
    }
  }

  /** The prompt as token ids. */
  public static RoutingPrompt ofTokens(int[] tokenIds) {
    return new RoutingPrompt(tokenIds, null, tokenIds.length, false, null);
  }

  /**
   * Approximate mode over {@code text}: local hashes of its full {@code blockSize}-pseudo-token chunks, seeded as the
   * router seeds a request's hashes ({@code cacheSalt}, {@code loraName}; null or empty for none).
   */
  public static RoutingPrompt approximate(String text, int blockSize, String cacheSalt, String loraName,
                                          String reason) {
    int[] pseudo = pseudoTokens(text);
    long[] hashes = BlockHasher.localBlockHashes(pseudo, blockSize, BlockHasher.seed(cacheSalt, loraName));
    return new RoutingPrompt(null, hashes, pseudo.length, true, reason);
  }

  /**
   * A batch: the first prompt's local block hashes and the total length of all of them.
   */
  public static RoutingPrompt batch(List<int[]> prompts, int blockSize, String cacheSalt, String loraName) {
    if (prompts.isEmpty()) {
      throw new IllegalArgumentException("an empty batch");
    }
    if (prompts.size() == 1) {
      return ofTokens(prompts.get(0));
    }
    long total = 0;
    for (int[] prompt : prompts) {
      total += prompt.length;
    }
    long[] hashes = BlockHasher.localBlockHashes(prompts.get(0), blockSize, BlockHasher.seed(cacheSalt, loraName));
    return new RoutingPrompt(null, hashes, (int) Math.min(Integer.MAX_VALUE, total), false, null);
  }

  /** UTF-8 bytes packed little-endian four to an int, the last one zero-padded (GIE's {@code packBytes}). */
  static int[] pseudoTokens(String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    int[] out = new int[(bytes.length + BYTES_PER_TOKEN - 1) / BYTES_PER_TOKEN];
    for (int i = 0; i < bytes.length; i++) {
      out[i / BYTES_PER_TOKEN] |= (bytes[i] & 0xff) << (8 * (i % BYTES_PER_TOKEN));
    }
    return out;
  }

  /**
   * The canonical text of a chat for approximate mode: the tools as JSON, then for each message its role, its text
   * (string content or text parts joined by newlines) and its tool calls as JSON, each message on its own lines.
   */
  static String canonicalChatText(List<Map<String, Object>> messages, Object tools) {
    StringBuilder out = new StringBuilder();
    if (tools instanceof List<?> list && !list.isEmpty()) {
      out.append(PythonJson.dumps(list, null, null, false, false)).append('\n');
    }
    List<Map<String, Object>> normalized = new ArrayList<>(messages.size());
    for (Map<String, Object> message : messages) {
      normalized.add(message);
    }
    for (Map<String, Object> message : ChatTemplate.normalizeTextOnly(normalized)) {
      out.append(message.get("role")).append('\n').append(message.get("content")).append('\n');
      Object calls = message.get("tool_calls");
      if (calls != null) {
        out.append(PythonJson.dumps(calls, null, null, false, false)).append('\n');
      }
      out.append('\n');
    }
    return out.toString();
  }
}
