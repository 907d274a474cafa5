package io.kvrouter.sim.server;

import io.kvrouter.tokenizer.ChatTemplate;
import io.kvrouter.tokenizer.ModelTokenizer;
import io.kvrouter.tokenizer.TemplateException;
import java.util.List;
import java.util.Map;

/**
 * A model's HuggingFace tokenizer and chat template (router-tokenizer), as vLLM uses them: a completion's text is
 * encoded with the special tokens its request asks for; a chat request is rendered by the template (which holds the
 * BOS itself) and encoded without adding any; output ids decode with special tokens skipped.
 */
public final class ModelPromptTokenizer implements PromptTokenizer {
  private final ModelTokenizer tokenizer;

  public ModelPromptTokenizer(ModelTokenizer tokenizer) {
    this.tokenizer = tokenizer;
  }

  @Override
  public int[] encodePrompt(String text, boolean addSpecialTokens) {
    return tokenizer.encode(text, addSpecialTokens);
  }

  @Override
  public int[] encodeChat(List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, Object> extra) {
    ChatTemplate template = tokenizer.chatTemplate();
    if (template == null) {
      throw new Unsupported("the model's tokenizer has no chat template: chat completions need one");
    }
    try {
      return tokenizer.encode(template.render(messages, addGenerationPrompt, extra), false);
    } catch (TemplateException e) {
      throw new Unsupported(e.getMessage());
    }
  }

  @Override
  public String decode(int[] ids) {
    return tokenizer.decode(ids, true);
  }

  @Override
  public int vocabularySize() {
    return tokenizer.vocabularySize();
  }
}
