package io.kvrouter.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The committed models/kvrouter-tiny files are exactly what models/generate_tiny.py produces from its corpus. */
class TinyModelTest {
  static final List<String> FILES = List.of("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
      "config.json", "generation_config.json");

  @Test
  void committedFilesAreWhatTheScriptGenerates(@TempDir Path out) throws Exception {
    PythonRunner.run("", 120, "models/generate_tiny.py", "--out", out.toString());
    Path committed = PythonRunner.REPO.resolve("models/kvrouter-tiny");
    for (String file : FILES) {
      assertThat(Files.readString(out.resolve(file))).as(file).isEqualTo(Files.readString(committed.resolve(file)));
    }
  }

  @Test
  void theModelConfigMatchesTheTokenizer() throws Exception {
    Path dir = PythonRunner.REPO.resolve("models/kvrouter-tiny");
    var config = Inputs.JSON.readTree(dir.resolve("config.json").toFile());
    var vocab = Inputs.JSON.readTree(dir.resolve("tokenizer.json").toFile()).path("model").path("vocab");
    assertThat(config.path("vocab_size").asInt()).isEqualTo(vocab.size());
    assertThat(config.path("hidden_size").asInt()).isEqualTo(64);
    assertThat(config.path("num_hidden_layers").asInt()).isEqualTo(2);
    assertThat(config.path("architectures").get(0).asText()).isEqualTo("LlamaForCausalLM");
  }
}
