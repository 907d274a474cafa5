package io.kvrouter.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelTokenizerTest {
  static final Path TINY = PythonRunner.REPO.resolve("models/kvrouter-tiny");
  static final List<String> TEXTS = List.of(
      "Hello kvrouter, route this prompt.",
      "",
      "  leading and trailing spaces  ",
      "Résumé 世界 🙂 — unicode\n\ttabs and newlines",
      "<|begin_of_text|>special tokens typed as text<|eot_id|>",
      "Every port and timeout can be set from the environment: KVROUTER_GRPC_PORT=50051".repeat(20));

  @Test
  void encodesExactlyAsHuggingFacePythonTokenizers() throws Exception {
    try (ModelTokenizer tokenizer = ModelTokenizer.load(TINY)) {
      for (boolean special : new boolean[] {true, false}) {
        List<List<Integer>> expected = python(TINY.resolve("tokenizer.json"), TEXTS, special);
        for (int i = 0; i < TEXTS.size(); i++) {
          assertThat(tokenizer.encode(TEXTS.get(i), special)).as("%s, special tokens %s", TEXTS.get(i), special)
              .containsExactly(expected.get(i).stream().mapToInt(Integer::intValue).toArray());
        }
      }
    }
  }

  @Test
  void decodesAndSizesItsVocabularyAsHuggingFacePythonTokenizers() throws Exception {
    try (ModelTokenizer tokenizer = ModelTokenizer.load(TINY)) {
      Map<String, Object> reference = pythonReference(TINY.resolve("tokenizer.json"), TEXTS, true);
      @SuppressWarnings("unchecked")
      List<String> decoded = (List<String>) reference.get("decoded");
      for (int i = 0; i < TEXTS.size(); i++) {
        assertThat(tokenizer.decode(tokenizer.encode(TEXTS.get(i), true), true)).as("%s", TEXTS.get(i))
            .isEqualTo(decoded.get(i));
      }
      assertThat(tokenizer.vocabularySize()).isEqualTo(reference.get("vocabulary_size"));
    }
  }

  @Test
  void addsBosOnlyWithSpecialTokens() throws Exception {
    try (ModelTokenizer tokenizer = ModelTokenizer.load(TINY.resolve("tokenizer.json"))) {
      int[] with = tokenizer.encode("route me", true);
      int[] without = tokenizer.encode("route me", false);
      assertThat(with).hasSize(without.length + 1);
      assertThat(with[0]).isEqualTo(0); // <|begin_of_text|> is the first special token of kvrouter-tiny
    }
  }

  @Test
  void readsTheChatTemplateAndSpecialTokensOfTokenizerConfig() throws Exception {
    try (ModelTokenizer tokenizer = ModelTokenizer.load(TINY)) {
      assertThat(tokenizer.specialTokens()).containsEntry("bos_token", "<|begin_of_text|>")
          .containsEntry("eos_token", "<|eot_id|>");
      String prompt = tokenizer.chatTemplate().render(List.of(Map.of("role", "user", "content", " hi ")), true,
          Map.of());
      assertThat(prompt).isEqualTo("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
          + "<|start_header_id|>assistant<|end_header_id|>\n\n");
      // the template holds BOS: the chat endpoint encodes without special tokens, so BOS appears once
      int[] ids = tokenizer.encode(prompt, false);
      assertThat(ids[0]).isEqualTo(0);
      assertThat(ids[1]).isNotEqualTo(0);
    }
  }

  @Test
  void anExplicitTemplateFileWinsAndAModelWithoutOneHasNone(@TempDir Path dir) throws Exception {
    Files.copy(TINY.resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
    try (ModelTokenizer bare = ModelTokenizer.load(dir)) {
      assertThat(bare.chatTemplate()).isNull();
      assertThat(bare.specialTokens()).isEmpty();
    }
    Path template = Files.writeString(dir.resolve("t.jinja"), "{% for m in messages %}[{{ m.role }}]{% endfor %}");
    try (ModelTokenizer withFile = ModelTokenizer.load(dir, template)) {
      assertThat(withFile.chatTemplate().render(List.of(Map.of("role", "user", "content", "x")), false, Map.of()))
          .isEqualTo("[user]");
    }
  }

  @Test
  void rejectsWhatIsNotATokenizer(@TempDir Path dir) throws Exception {
    assertThatThrownBy(() -> ModelTokenizer.load(dir.resolve("missing.json")))
        .isInstanceOf(java.io.IOException.class).hasMessageContaining("no tokenizer file");
    Path junk = Files.writeString(dir.resolve("tokenizer.json"), "{\"not\": \"a tokenizer\"}");
    assertThatThrownBy(() -> ModelTokenizer.load(junk)).isInstanceOf(java.io.IOException.class)
        .hasMessageContaining("is not a HuggingFace tokenizer");
  }

  @Test
  void concurrentEncodesAgreeWithASingleThread() throws Exception {
    try (ModelTokenizer tokenizer = ModelTokenizer.load(TINY)) {
      List<int[]> reference = new ArrayList<>();
      for (String text : TEXTS) {
        reference.add(tokenizer.encode(text, true));
      }
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<Boolean>> results = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
          results.add(pool.submit(() -> {
            for (int round = 0; round < 200; round++) {
              int i = round % TEXTS.size();
              if (!java.util.Arrays.equals(tokenizer.encode(TEXTS.get(i), true), reference.get(i))) {
                return false;
              }
            }
            return true;
          }));
        }
        for (Future<Boolean> result : results) {
          assertThat(result.get(60, TimeUnit.SECONDS)).isTrue();
        }
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void encodeAfterCloseFailsClearlyAndCloseIsIdempotent() throws Exception {
    ModelTokenizer tokenizer = ModelTokenizer.load(TINY);
    tokenizer.close();
    tokenizer.close();
    assertThatThrownBy(() -> tokenizer.encode("x", true)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  static List<List<Integer>> python(Path tokenizer, List<String> texts, boolean special) throws Exception {
    @SuppressWarnings("unchecked")
    List<List<Integer>> ids = (List<List<Integer>>) pythonReference(tokenizer, texts, special).get("ids");
    return ids;
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> pythonReference(Path tokenizer, List<String> texts, boolean special) throws Exception {
    String out = PythonRunner.run(ChatTemplateConformanceTest.JSON.writeValueAsString(Map.of(
        "tokenizer", tokenizer.toString(), "texts", texts, "add_special_tokens", special)), 60,
        "modules/router-tokenizer/src/test/python/encode.py");
    return ChatTemplateConformanceTest.JSON.readValue(out, Map.class);
  }
}
