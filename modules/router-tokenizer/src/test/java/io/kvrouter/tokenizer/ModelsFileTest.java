package io.kvrouter.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelsFileTest {
  static final Path TINY = PythonRunner.REPO.resolve("models/kvrouter-tiny");

  @Test
  void theShippedExampleLoads() throws Exception {
    try (ModelTokenizers models = ModelTokenizers.load(PythonRunner.REPO.resolve("models/models.yaml"))) {
      assertThat(models.names()).containsExactly("org/llama-8b", "org/no-tokenizer");
      assertThat(models.get("org/llama-8b").chatTemplate()).isNotNull();
      assertThat(models.get("org/no-tokenizer").approximate()).isTrue();
      assertThat(models.get("org/unknown")).isNull();
    }
  }

  @Test
  void jsonIsAcceptedAndPathsAreRelativeToTheFile(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("models.json"), "{\"models\": [{\"name\": \"m\", \"tokenizer\": \""
        + TINY.resolve("tokenizer.json") + "\", \"chat_template\": \"t.jinja\"}]}");
    Files.writeString(dir.resolve("t.jinja"), "{{ messages[0].content }}");
    ModelsFile parsed = ModelsFile.read(file);
    assertThat(parsed.models()).singleElement().satisfies(e -> {
      assertThat(e.chatTemplate()).isEqualTo(dir.resolve("t.jinja"));
      assertThat(e.approximate()).isFalse();
    });
  }

  @Test
  void errorsNameTheEntry(@TempDir Path dir) throws Exception {
    assertError(dir, "models: [{name: a}, {name: a}]", "models[1] (a): the name appears twice");
    assertError(dir, "models: [{name: a, tokenizer: nowhere}]", "models[0] (a): tokenizer");
    assertError(dir, "models: [{name: a, tokenizer: " + TINY + ", chat_template: none.jinja}]",
        "models[0] (a): chat_template");
    assertError(dir, "models: [{name: a, tokeniser: x}]", "models[0] (a): unknown key 'tokeniser'");
    assertError(dir, "models: [{tokenizer: x}]", "models[0]: 'name' is required");
    assertError(dir, "models: [{name: a, chat_template: t.jinja}]", "chat_template");
    assertError(dir, "models: {name: a}", "'models' must be a list");
    assertError(dir, "engines: []", "expected a mapping with a 'models' list");
    assertError(dir, "models: [ {name: a", "cannot be read as YAML");
    assertError(dir, "models: [{name: '" + "x".repeat(300) + "'}]", "longer than 256");
  }

  private static void assertError(Path dir, String yaml, String message) throws Exception {
    Path file = Files.writeString(dir.resolve("models.yaml"), yaml);
    Files.writeString(dir.resolve("t.jinja"), "x");
    assertThatThrownBy(() -> ModelsFile.read(file)).isInstanceOf(ModelsFileException.class)
        .hasMessageContaining(message).hasMessageContaining(file.toString());
  }

  @Test
  void reloadAppliesAGoodFileKeepsUnchangedTokenizersAndClosesRemovedOnes(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("models.yaml");
    Files.writeString(file, "models: [{name: a, tokenizer: " + TINY + "}, {name: b, tokenizer: " + TINY + "}]");
    try (ModelTokenizers models = ModelTokenizers.load(file)) {
      ModelTokenizer a = models.get("a").tokenizer();
      ModelTokenizer b = models.get("b").tokenizer();
      Files.writeString(file, "models: [{name: a, tokenizer: " + TINY + "}, {name: c}]");
      ModelTokenizers.ReloadResult result = models.reload();
      assertThat(result.applied()).isTrue();
      assertThat(result.added()).containsExactly("c");
      assertThat(result.removed()).containsExactly("b");
      assertThat(result.reloaded()).isEmpty();
      assertThat(models.get("a").tokenizer()).isSameAs(a);
      assertThat(a.encode("still open", true)).isNotEmpty();
      assertThatThrownBy(() -> b.encode("closed", true)).isInstanceOf(IllegalStateException.class);
      assertThat(models.get("c").approximate()).isTrue();
    }
  }

  @Test
  void aBrokenReloadKeepsTheCurrentModelsAndSaysWhy(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("models.yaml");
    Files.writeString(file, "models: [{name: a, tokenizer: " + TINY + "}]");
    try (ModelTokenizers models = ModelTokenizers.load(file)) {
      ModelTokenizer a = models.get("a").tokenizer();
      Path junk = Files.writeString(dir.resolve("junk.json"), "{}");
      Files.writeString(file, "models: [{name: a, tokenizer: " + TINY + "}, {name: b, tokenizer: " + junk + "}]");
      ModelTokenizers.ReloadResult broken = models.reload();
      assertThat(broken.applied()).isFalse();
      assertThat(broken.error()).contains("model b").contains("is not a HuggingFace tokenizer");
      assertThat(models.lastError()).isEqualTo(broken.error());
      assertThat(models.names()).containsExactly("a");
      assertThat(models.get("a").tokenizer()).isSameAs(a);
      assertThat(a.encode("works", false)).isNotEmpty();
      Files.writeString(file, "models: [{name: a, tokenizer: " + TINY + "}]");
      assertThat(models.reload().applied()).isTrue();
      assertThat(models.lastError()).isNull();
    }
  }

  @Test
  void aChangedTokenizerFileIsReloaded(@TempDir Path dir) throws Exception {
    Path model = Files.createDirectory(dir.resolve("m"));
    Files.copy(TINY.resolve("tokenizer.json"), model.resolve("tokenizer.json"));
    Path file = Files.writeString(dir.resolve("models.yaml"), "models: [{name: a, tokenizer: m}]");
    try (ModelTokenizers models = ModelTokenizers.load(file)) {
      assertThat(models.get("a").chatTemplate()).isNull();
      Files.copy(TINY.resolve("tokenizer_config.json"), model.resolve("tokenizer_config.json"));
      ModelTokenizers.ReloadResult result = models.reload();
      assertThat(result.reloaded()).containsExactly("a");
      assertThat(models.get("a").chatTemplate().render(List.of(Map.of("role", "user", "content", "x")), false,
          Map.of())).startsWith("<|begin_of_text|>");
    }
  }
}
