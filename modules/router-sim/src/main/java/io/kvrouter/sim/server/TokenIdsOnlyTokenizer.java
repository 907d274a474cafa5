package io.kvrouter.sim.server;

import java.util.List;
import java.util.Map;

/**
 * The engine without a tokenizer: prompts must be token ids (text prompts and chat messages answer 400 naming the
 * missing option), and an output token id {@code N} reads as the text {@code " N"}, so a client sees one word per
 * token. Output ids are drawn from Llama 3's vocabulary size unless told otherwise.
 */
public final class TokenIdsOnlyTokenizer implements PromptTokenizer {
  public static final int DEFAULT_VOCABULARY = 128_256;

  private final int vocabulary;

  public TokenIdsOnlyTokenizer(int vocabulary) {
    if (vocabulary <= 0) {
      throw new IllegalArgumentException("vocabulary size must be positive, got " + vocabulary);
    }
    this.vocabulary = vocabulary;
  }

  @Override
  public int[] encodePrompt(String text, boolean addSpecialTokens) {
    throw new Unsupported("This engine has no tokenizer (start it with --tokenizer DIR): send `prompt` as token ids "
        + "(a list of integers, or a list of such lists).");
  }

  @Override
  public int[] encodeChat(List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, Object> extra) {
    throw new Unsupported("This engine has no tokenizer (start it with --tokenizer DIR): chat messages need one; use "
        + "/v1/completions with `prompt` as token ids.");
  }

  @Override
  public String decode(int[] ids) {
    StringBuilder text = new StringBuilder(ids.length * 7);
    for (int id : ids) {
      text.append(' ').append(id);
    }
    return text.toString();
  }

  @Override
  public int vocabularySize() {
    return vocabulary;
  }
}
