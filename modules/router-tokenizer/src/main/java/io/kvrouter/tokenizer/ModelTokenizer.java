package io.kvrouter.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.TokenizersLibrary;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A model's HuggingFace tokenizer ({@code tokenizer.json}, through DJL's Rust tokenizers over JNI) and its chat
 * template, as the engine uses them:
 *
 * <ul>
 *   <li>{@code /v1/completions} with a text prompt: {@code encode(prompt, true)} — vLLM's {@code CompletionRequest}
 *       has {@code add_special_tokens = True} by default, so the tokenizer's post-processor adds its special tokens
 *       (BOS for Llama);</li>
 *   <li>{@code /v1/chat/completions}: {@code encode(chatTemplate().render(...), false)} — the rendered template already
 *       holds BOS, and vLLM's {@code ChatCompletionRequest} has {@code add_special_tokens = False} by default (a
 *       request may set either field; pass it through).</li>
 * </ul>
 *
 * Truncation and padding are off (transformers turns them off per call; a {@code tokenizer.json} may carry them).
 *
 * <p>The native library comes from DJL's jar (linux-x86_64, linux-aarch64, osx-aarch64, win-x86_64), extracted once
 * into DJL's cache directory ({@code ~/.djl.ai}, or {@code DJL_CACHE_DIR}); this class sets DJL's offline mode
 * (unless {@code DJL_OFFLINE} or {@code ai.djl.offline} is set) so DJL never tries to download a library, e.g. a
 * CUDA flavour on a GPU host. On a platform the jar has no library for, {@link #load} fails with DJL's error.
 *
 * <p>Thread-safe: {@link #encode} may be called from any number of threads. {@link #close} frees the native
 * tokenizer once the encodes in flight have finished; an encode that starts after it throws
 * {@link IllegalStateException}.
 */
public final class ModelTokenizer implements AutoCloseable {
  private static final int CLOSING = 1 << 30;

  static {
    if (System.getenv("DJL_OFFLINE") == null && System.getProperty("ai.djl.offline") == null) {
      System.setProperty("ai.djl.offline", "true");
    }
  }

  private final Path tokenizerJson;
  private final HuggingFaceTokenizer tokenizer;
  private final long handle;
  private final ChatTemplate chatTemplate;
  private final Map<String, Object> specialTokens;
  private final int vocabularySize;
  private final AtomicInteger users = new AtomicInteger();
  private final AtomicBoolean freed = new AtomicBoolean();

  private ModelTokenizer(Path tokenizerJson, HuggingFaceTokenizer tokenizer, ChatTemplate chatTemplate,
      Map<String, Object> specialTokens, int vocabularySize) {
    this.vocabularySize = vocabularySize;
    this.tokenizerJson = tokenizerJson;
    this.tokenizer = tokenizer;
    this.handle = tokenizer.getHandle();
    this.chatTemplate = chatTemplate;
    this.specialTokens = specialTokens;
  }

  /**
   * Loads a model directory (its {@code tokenizer.json}) or a {@code tokenizer.json} file. The chat template is
   * {@code chat_template.jinja} next to it when present, else {@code tokenizer_config.json}'s {@code chat_template}
   * (the one named "default" when it is a list), else none.
   */
  public static ModelTokenizer load(Path modelDirOrTokenizerJson) throws IOException {
    return load(modelDirOrTokenizerJson, null);
  }

  /**
   * As {@link #load(Path)}, with the chat template read from {@code chatTemplateFile} when it is not null.
   *
   * @throws IOException when a file cannot be read or is not a tokenizer
   * @throws TemplateException when the chat template does not parse
   */
  public static ModelTokenizer load(Path modelDirOrTokenizerJson, Path chatTemplateFile) throws IOException {
    Path json = Files.isDirectory(modelDirOrTokenizerJson) ? modelDirOrTokenizerJson.resolve("tokenizer.json")
        : modelDirOrTokenizerJson;
    if (!Files.isRegularFile(json)) {
      throw new IOException("no tokenizer file at " + json);
    }
    Path dir = json.toAbsolutePath().getParent();
    JsonNode config = readConfig(dir.resolve("tokenizer_config.json"));
    Map<String, Object> specialTokens = specialTokens(config);
    String templateSource = null;
    if (chatTemplateFile != null) {
      templateSource = Files.readString(chatTemplateFile, StandardCharsets.UTF_8);
    } else if (Files.isRegularFile(dir.resolve("chat_template.jinja"))) {
      templateSource = Files.readString(dir.resolve("chat_template.jinja"), StandardCharsets.UTF_8);
    } else if (config != null) {
      templateSource = configTemplate(config.get("chat_template"));
    }
    ChatTemplate template = templateSource == null ? null : ChatTemplate.of(templateSource, specialTokens);
    HuggingFaceTokenizer tokenizer;
    try {
      tokenizer = HuggingFaceTokenizer.newInstance(json, Map.of(
          "truncation", "false", "padding", "false", "addSpecialTokens", "true"));
    } catch (RuntimeException e) { // the Rust side rejects a file that is not a tokenizer
      throw new IOException(json + " is not a HuggingFace tokenizer: " + e.getMessage(), e);
    }
    return new ModelTokenizer(json, tokenizer, template, specialTokens, vocabularySize(json));
  }

  /** One above the highest id the tokenizer file defines: its model's vocabulary or an added token. */
  private static int vocabularySize(Path json) throws IOException {
    JsonNode file = Inputs.JSON.readTree(json.toFile());
    int highest = -1;
    JsonNode vocab = file.path("model").path("vocab");
    if (vocab.isObject()) { // BPE, WordPiece, WordLevel: token -> id
      for (JsonNode id : (Iterable<JsonNode>) vocab::elements) {
        highest = Math.max(highest, id.asInt());
      }
    } else if (vocab.isArray()) { // Unigram: [token, score] in id order
      highest = vocab.size() - 1;
    }
    for (JsonNode added : file.path("added_tokens")) {
      highest = Math.max(highest, added.path("id").asInt(-1));
    }
    return highest + 1;
  }

  private static JsonNode readConfig(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      return null;
    }
    try {
      return Inputs.JSON.readTree(file.toFile());
    } catch (IOException e) {
      throw new IOException(file + " is not valid JSON: " + e.getMessage(), e);
    }
  }

  /** The special tokens transformers passes to templates: every {@code *_token} that is a string or an AddedToken. */
  private static Map<String, Object> specialTokens(JsonNode config) {
    Map<String, Object> tokens = new LinkedHashMap<>();
    if (config == null) {
      return tokens;
    }
    for (String key : List.of("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
        "mask_token")) {
      JsonNode value = config.get(key);
      if (value != null && value.isTextual()) {
        tokens.put(key, value.asText());
      } else if (value != null && value.isObject() && value.path("content").isTextual()) {
        tokens.put(key, value.path("content").asText());
      }
    }
    return tokens;
  }

  private static String configTemplate(JsonNode template) {
    if (template == null || template.isNull()) {
      return null;
    }
    if (template.isTextual()) {
      return template.asText();
    }
    if (template.isArray()) { // [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
      for (JsonNode named : template) {
        if ("default".equals(named.path("name").asText()) && named.path("template").isTextual()) {
          return named.path("template").asText();
        }
      }
    }
    return null;
  }

  /** Token ids of {@code text}; {@code addSpecialTokens} as the engine's endpoint does (see the class comment). */
  public int[] encode(String text, boolean addSpecialTokens) {
    if (text == null) {
      throw new NullPointerException("text");
    }
    acquire();
    try {
      long encoding = TokenizersLibrary.LIB.encode(handle, text, addSpecialTokens);
      long[] ids;
      try {
        ids = TokenizersLibrary.LIB.getTokenIds(encoding);
      } finally {
        TokenizersLibrary.LIB.deleteEncoding(encoding);
      }
      int[] out = new int[ids.length];
      for (int i = 0; i < ids.length; i++) {
        out[i] = (int) ids[i];
      }
      return out;
    } finally {
      release();
    }
  }

  /** The text of {@code ids}, special tokens skipped when asked (as an engine's detokenizer does by default). */
  public String decode(int[] ids, boolean skipSpecialTokens) {
    long[] wide = new long[ids.length];
    for (int i = 0; i < ids.length; i++) {
      wide[i] = ids[i];
    }
    acquire();
    try {
      return TokenizersLibrary.LIB.decode(handle, wide, skipSpecialTokens);
    } finally {
      release();
    }
  }

  /** Valid token ids are below this. */
  public int vocabularySize() {
    return vocabularySize;
  }

  /** The model's chat template, or null when it has none. */
  public ChatTemplate chatTemplate() {
    return chatTemplate;
  }

  /** The special tokens of {@code tokenizer_config.json} ({@code bos_token}, {@code eos_token}, ...). */
  public Map<String, Object> specialTokens() {
    return Map.copyOf(specialTokens);
  }

  public Path tokenizerJson() {
    return tokenizerJson;
  }

  private void acquire() {
    if ((users.incrementAndGet() & CLOSING) != 0) {
      release();
      throw new IllegalStateException("the tokenizer of " + tokenizerJson + " is closed");
    }
  }

  private void release() {
    if (users.decrementAndGet() == CLOSING) {
      free();
    }
  }

  @Override
  public void close() {
    int before;
    do {
      before = users.get();
      if ((before & CLOSING) != 0) {
        return;
      }
    } while (!users.compareAndSet(before, before | CLOSING));
    if (before == 0) {
      free();
    }
  }

  private void free() {
    if (freed.compareAndSet(false, true)) {
      tokenizer.close();
    }
  }
}
