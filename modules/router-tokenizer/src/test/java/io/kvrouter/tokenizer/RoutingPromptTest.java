package io.kvrouter.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.hashing.BlockHasher;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class RoutingPromptTest {
  static ModelTokenizers models;
  static ModelTokenizers.Model tiny;

  @BeforeAll
  static void load() throws Exception {
    models = ModelTokenizers.load(PythonRunner.REPO.resolve("models/models.yaml"));
    tiny = models.get("org/llama-8b");
  }

  @AfterAll
  static void close() {
    models.close();
  }

  static Map<String, Object> json(String body) throws Exception {
    @SuppressWarnings("unchecked")
    Map<String, Object> map = Inputs.JSON.readValue(body, Map.class);
    return map;
  }

  @Test
  void pseudoTokensPackUtf8BytesFourToAnIntLittleEndian() {
    int[] tokens = RoutingPrompt.pseudoTokens("abcdé");
    byte[] bytes = "abcdé".getBytes(StandardCharsets.UTF_8); // 6 bytes
    assertThat(tokens).hasSize(2);
    assertThat(tokens[0]).isEqualTo(('a') | ('b' << 8) | ('c' << 16) | ('d' << 24));
    assertThat(tokens[1]).isEqualTo((bytes[4] & 0xff) | ((bytes[5] & 0xff) << 8));
  }

  @Test
  void approximateHashesOneFullBlockOfPseudoTokensEachWithTheRoutersHasher() {
    String text = "x".repeat(4 * 16 * 3 + 5); // 3 full blocks of 16 pseudo-tokens and a partial one
    RoutingPrompt prompt = RoutingPrompt.approximate(text, 16, null, null, "no tokenizer");
    assertThat(prompt.islTokens()).isEqualTo(16 * 3 + 2);
    assertThat(prompt.blockHashes()).hasSize(prompt.islTokens() / 16)
        .containsExactly(BlockHasher.localBlockHashes(RoutingPrompt.pseudoTokens(text), 16, BlockHasher.BASE_SEED));
    assertThat(prompt.approximate()).isTrue();
    assertThat(prompt.tokenIds()).isNull();
  }

  @Test
  void aSharedTextPrefixSharesLeadingHashesAndASaltSeparatesThem() {
    String prefix = "You are a helpful assistant. ".repeat(20);
    RoutingPrompt one = RoutingPrompt.approximate(prefix + "first question", 16, null, null, "");
    RoutingPrompt two = RoutingPrompt.approximate(prefix + "second, longer question", 16, null, null, "");
    int shared = prefix.length() / (4 * 16);
    assertThat(Arrays.copyOf(one.blockHashes(), shared)).containsExactly(Arrays.copyOf(two.blockHashes(), shared));
    RoutingPrompt salted = RoutingPrompt.approximate(prefix + "first question", 16, "tenant-a", null, "");
    assertThat(salted.blockHashes()[0]).isNotEqualTo(one.blockHashes()[0]);
  }

  @Test
  void chatWithATokenizerIsTheTemplatesTextEncodedWithoutSpecialTokens() throws Exception {
    Map<String, Object> body = json("{\"model\": \"org/llama-8b\", \"messages\": [{\"role\": \"user\", "
        + "\"content\": \"hello\"}]}");
    RoutingPrompt prompt = RoutingPrompts.chat(tiny, body, 16, null);
    String text = tiny.chatTemplate().render(List.of(Map.of("role", "user", "content", "hello")), true, Map.of());
    assertThat(prompt.tokenIds()).containsExactly(tiny.tokenizer().encode(text, false));
    assertThat(prompt.approximate()).isFalse();
    body.put("add_special_tokens", true);
    assertThat(RoutingPrompts.chat(tiny, body, 16, null).tokenIds()).hasSize(prompt.islTokens() + 1);
  }

  @Test
  void chatWithoutATokenizerOrWithUnrenderedContentIsApproximate() throws Exception {
    Map<String, Object> body = json("{\"messages\": [{\"role\": \"user\", \"content\": \"hello\"}]}");
    RoutingPrompt approximate = RoutingPrompts.chat(models.get("org/no-tokenizer"), body, 16, null);
    assertThat(approximate.approximate()).isTrue();
    assertThat(approximate.reason()).isEqualTo("no tokenizer");
    assertThat(RoutingPrompts.chat(null, body, 16, null).approximate()).isTrue();
    Map<String, Object> image = json("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\","
        + " \"image_url\": {\"url\": \"data:,\"}}, {\"type\": \"text\", \"text\": \"what is it\"}]}]}");
    RoutingPrompt media = RoutingPrompts.chat(tiny, image, 16, null);
    assertThat(media.approximate()).isTrue();
    assertThat(media.reason()).contains("image_url");
  }

  @Test
  void completionsAcceptTheFourPromptForms() throws Exception {
    int[] text = RoutingPrompts.completion(tiny, json("{\"prompt\": \"route me\"}"), 16, null).tokenIds();
    assertThat(text).containsExactly(tiny.tokenizer().encode("route me", true));
    assertThat(RoutingPrompts.completion(tiny, json("{\"prompt\": \"route me\", \"add_special_tokens\": false}"), 16,
        null).tokenIds()).containsExactly(tiny.tokenizer().encode("route me", false));
    assertThat(RoutingPrompts.completion(null, json("{\"prompt\": [1, 2, 3]}"), 16, null).tokenIds())
        .containsExactly(1, 2, 3);
    int[] first = new int[40];
    Arrays.fill(first, 7);
    RoutingPrompt batch = RoutingPrompts.completion(null, json("{\"prompt\": [" + Arrays.toString(first)
        + ", [1, 2, 3]]}"), 16, null);
    assertThat(batch.islTokens()).isEqualTo(43);
    assertThat(batch.blockHashes()).containsExactly(BlockHasher.localBlockHashes(first, 16, BlockHasher.BASE_SEED));
    RoutingPrompt strings = RoutingPrompts.completion(tiny, json("{\"prompt\": [\"a b c\", \"d e\"]}"), 1, null);
    assertThat(strings.islTokens()).isEqualTo(tiny.tokenizer().encode("a b c", true).length
        + tiny.tokenizer().encode("d e", true).length);
  }

  @Test
  void badBodiesAreClientErrors() throws Exception {
    for (String body : List.of("{}", "{\"prompt\": 5}", "{\"prompt\": []}", "{\"prompt\": [-1]}",
        "{\"prompt\": [1.5]}", "{\"prompt\": \"x\", \"cache_salt\": 3}", "{\"prompt\": [\"x\", [1]]}")) {
      assertThatThrownBy(() -> RoutingPrompts.completion(null, json(body), 16, null))
          .as(body).isInstanceOfSatisfying(TemplateException.class, e -> assertThat(e.isClientError()).isTrue());
    }
    for (String body : List.of("{}", "{\"messages\": []}", "{\"messages\": [{\"content\": \"no role\"}]}",
        "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}",
        "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"chat_template_kwargs\": 1}")) {
      assertThatThrownBy(() -> RoutingPrompts.chat(tiny, json(body), 16, null))
          .as(body).isInstanceOfSatisfying(TemplateException.class, e -> assertThat(e.isClientError()).isTrue());
    }
  }
}
