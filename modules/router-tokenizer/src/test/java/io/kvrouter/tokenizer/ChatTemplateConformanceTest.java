package io.kvrouter.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Real models' chat templates (llama.cpp's models/templates, see fetch_chat_templates.py) rendered by ChatTemplate
 * and by Python's jinja2 in transformers' environment (render_chat_templates.py) on the same conversations: the
 * outputs must be equal character for character, a template's raise_exception must be a REJECTED TemplateException
 * with Python's message, and the content format must be the one vLLM detects.
 */
class ChatTemplateConformanceTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String NOW = "2024-07-26T10:00:00";

  record Case(String template, String conversation, Map<String, Object> specialTokens,
              List<Map<String, Object>> messages, boolean addGenerationPrompt, Map<String, Object> extra) {}

  record Expected(String output, String error, boolean rejected, String contentFormat) {}

  /**
   * Templates whose rendering here differs from Python's on at least one of the conversations (README, "Chat
   * templates that are not supported"): Jinjava lacks what they use (Python repr of printed lists and dicts,
   * dict(), macros with keyword-only call patterns, whitespace around inline comments, ...). They must still either
   * render or fail with a TemplateException, never with another exception.
   */
  static final java.util.Set<String> KNOWN_MISMATCHES = java.util.Set.of(
      "Apriel-1.6-15b-Thinker-fixed.jinja",
      "ByteDance-Seed-OSS.jinja",
      "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
      "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
      "Kimi-K2-Instruct.jinja",
      "Kimi-K2-Thinking.jinja",
      "Kimi-K3.jinja",
      "MiniMax-M3.jinja",
      "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
      "NVIDIA-Nemotron-Nano-v2.jinja",
      "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
      "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
      "Qwen3-Coder.jinja",
      "Qwen3.5-4B.jinja",
      "fireworks-ai-llama-3-firefunction-v2.jinja",
      "google-gemma-4-31B-it-interleaved.jinja",
      "google-gemma-4-31B-it.jinja",
      "llama-cpp-deepseek-r1.jinja",
      "meetkai-functionary-medium-v3.1.jinja",
      "meetkai-functionary-medium-v3.2.jinja",
      "muse-glimmer.jinja",
      "tencent-Hy3.jinja",
      "unsloth-Apriel-1.5.jinja",
      "unsloth-mistral-Devstral-Small-2507.jinja");

  static List<Case> cases = new ArrayList<>();
  static List<Expected> expected = new ArrayList<>();

  @BeforeAll
  static void renderInPython() throws Exception {
    Path templates = PythonRunner.chatTemplates();
    Map<String, Object> conversations;
    try (InputStream in = ChatTemplateConformanceTest.class.getResourceAsStream("/chat/conversations.json")) {
      conversations = JSON.readValue(in, Map.class);
    }
    List<Path> files;
    try (Stream<Path> list = Files.list(templates)) {
      files = list.filter(p -> p.toString().endsWith(".jinja")).sorted().toList();
    }
    List<Map<String, Object>> request = new ArrayList<>();
    for (Path file : files) {
      for (Object c : (List<?>) conversations.get("conversations")) {
        Map<?, ?> conversation = (Map<?, ?>) c;
        Map<String, Object> extra = conversation.containsKey("extra")
            ? castMap(conversation.get("extra")) : Map.of();
        Case k = new Case(file.getFileName().toString(), (String) conversation.get("name"),
            specialTokens(file.getFileName().toString()), castList(conversation.get("messages")),
            !Boolean.FALSE.equals(conversation.get("add_generation_prompt")), extra);
        cases.add(k);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("template", file.toString());
        r.put("special_tokens", k.specialTokens());
        r.put("messages", k.messages());
        r.put("add_generation_prompt", k.addGenerationPrompt());
        r.put("extra", extra);
        r.put("now", NOW);
        request.add(r);
      }
    }
    String out = PythonRunner.run(JSON.writeValueAsString(Map.of("cases", request)), 300,
        "modules/router-tokenizer/src/test/python/render_chat_templates.py");
    for (Object r : (List<?>) JSON.readValue(out, Map.class).get("results")) {
      Map<?, ?> m = (Map<?, ?>) r;
      expected.add(new Expected((String) m.get("output"), (String) m.get("error"),
          Boolean.TRUE.equals(m.get("rejected")), (String) m.get("content_format")));
    }
  }

  /** Special tokens in the style of each family's tokenizer_config.json. */
  static Map<String, Object> specialTokens(String file) {
    String f = file.toLowerCase();
    if (f.contains("llama-3") || f.contains("llama-cpp-deepseek") || f.contains("hermes") || f.contains("functionary")
        || f.contains("firefunction") || f.contains("nemotron-super")) {
      return Map.of("bos_token", "<|begin_of_text|>", "eos_token", "<|eot_id|>");
    }
    if (f.contains("qwen") || f.contains("qwq")) {
      return Map.of("eos_token", "<|im_end|>", "pad_token", "<|endoftext|>");
    }
    if (f.contains("gemma")) {
      return Map.of("bos_token", "<bos>", "eos_token", "<eos>");
    }
    if (f.contains("deepseek")) {
      return Map.of("bos_token", "<｜begin▁of▁sentence｜>", "eos_token", "<｜end▁of▁sentence｜>");
    }
    return Map.of("bos_token", "<s>", "eos_token", "</s>");
  }

  @org.junit.jupiter.api.Test
  void atLeastTheMainFamiliesMatch() {
    for (String required : List.of("meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
        "meta-llama-Llama-3.3-70B-Instruct.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
        "Qwen-QwQ-32B.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja", "Mistral-Small-3.2-24B-Instruct-2506.jinja",
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-ai-DeepSeek-V3.1.jinja",
        "google-gemma-2-2b-it.jinja", "microsoft-Phi-3.5-mini-instruct.jinja")) {
      assertThat(KNOWN_MISMATCHES).doesNotContain(required);
      assertThat(cases).anyMatch(c -> c.template().equals(required));
    }
  }

  @TestFactory
  Stream<DynamicTest> everyTemplateMatchesPython() {
    List<DynamicTest> tests = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      Case k = cases.get(i);
      Expected e = expected.get(i);
      tests.add(DynamicTest.dynamicTest(k.template() + " / " + k.conversation(), () -> check(k, e)));
    }
    return tests.stream();
  }

  static void check(Case k, Expected e) throws IOException {
    Path file = PythonRunner.chatTemplates().resolve(k.template());
    Clock clock = Clock.fixed(LocalDateTime.parse(NOW).toInstant(ZoneOffset.UTC), ZoneOffset.UTC);
    if (KNOWN_MISMATCHES.contains(k.template()) || (e.output() == null && !e.rejected())) {
      // a known mismatch, or a template Python itself cannot render on this conversation (the engine would
      // answer an error too): rendering for routing may succeed or fail, but only with a TemplateException
      try {
        ChatTemplate.of(Files.readString(file), k.specialTokens(), clock)
            .render(k.messages(), k.addGenerationPrompt(), k.extra());
      } catch (TemplateException expected) {
        assertThat(expected.getMessage()).isNotBlank();
      }
      return;
    }
    ChatTemplate template = ChatTemplate.of(Files.readString(file), k.specialTokens(), clock);
    assertThat(template.contentFormat().name().toLowerCase()).as("content format").isEqualTo(e.contentFormat());
    if (e.output() != null) {
      String rendered = template.render(k.messages(), k.addGenerationPrompt(), k.extra());
      assertThat(rendered).isEqualTo(e.output());
    } else if (e.rejected()) {
      org.assertj.core.api.Assertions.assertThatThrownBy(
              () -> template.render(k.messages(), k.addGenerationPrompt(), k.extra()))
          .isInstanceOfSatisfying(TemplateException.class, t -> {
            assertThat(t.kind()).isEqualTo(TemplateException.Kind.REJECTED);
            assertThat(t.getMessage()).isEqualTo(e.error());
          });
    }
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> castMap(Object o) {
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> castList(Object o) {
    return (List<Map<String, Object>>) o;
  }
}
