package io.kvrouter.sim.server;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * A test stand-in for the real tokenizer (router-tokenizer, wired in by the lead): text is its UTF-8 bytes, a chat is
 * "role: content" lines, and output id N reads as the letter 'a' + N % 26. It lets the OpenAI SDK exercise chat
 * completions against the engine; it says nothing about real tokenization.
 */
final class LetterTokenizer implements PromptTokenizer {
  @Override
  public int[] encodePrompt(String text, boolean addSpecialTokens) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    int[] ids = new int[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      ids[i] = bytes[i] & 0xff;
    }
    return ids;
  }

  @Override
  public int[] encodeChat(List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, Object> extra) {
    StringBuilder text = new StringBuilder();
    for (Map<String, Object> message : messages) {
      text.append(message.get("role")).append(": ").append(message.get("content")).append('\n');
    }
    if (addGenerationPrompt) {
      text.append("assistant: ");
    }
    return encodePrompt(text.toString(), true);
  }

  @Override
  public String decode(int[] ids) {
    StringBuilder text = new StringBuilder();
    for (int id : ids) {
      text.append((char) ('a' + id % 26));
    }
    return text.toString();
  }

  @Override
  public int vocabularySize() {
    return 128_256;
  }
}
