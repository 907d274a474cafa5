package io.kvrouter.sim.server;

import java.util.List;
import java.util.Map;

/**
 * Text handling of the simulated engine: how a completion prompt and a chat request become token ids, and how output
 * ids become text. The engine itself works on token ids only; a prompt given as ids never reaches this.
 */
public interface PromptTokenizer {
  /** A prompt this tokenizer cannot turn into tokens; the engine answers 400 with the message. */
  final class Unsupported extends RuntimeException {
    public Unsupported(String message) {
      super(message);
    }
  }

  /** Token ids of a completion's text prompt. */
  int[] encodePrompt(String text, boolean addSpecialTokens);

  /** Token ids of a chat request: its messages through the model's chat template, then tokenized. */
  int[] encodeChat(List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, Object> extra);

  /** Text of generated token ids (a delta: the ids produced since the previous call for the same output). */
  String decode(int[] ids);

  /** Output tokens are drawn below this. */
  int vocabularySize();
}
