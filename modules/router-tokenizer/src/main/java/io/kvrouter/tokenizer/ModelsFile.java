package io.kvrouter.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * The models file ({@code KVROUTER_MODELS}): YAML (JSON is YAML too) of this shape, paths relative to the file:
 *
 * <pre>
 * models:
 *   - name: org/llama-8b                   # the model name requests carry ("model" in the body)
 *     tokenizer: kvrouter-tiny             # a tokenizer.json, or the directory holding it; absent: approximate mode
 *     chat_template: llama3.jinja          # optional; absent: chat_template.jinja or tokenizer_config.json's
 *                                          # chat_template next to the tokenizer
 * </pre>
 *
 * Validated when read: every entry needs a unique {@code name} (at most 256 characters), a {@code tokenizer} and a
 * {@code chat_template} that exist when given, and no other key; an error names the entry.
 */
public record ModelsFile(Path file, List<Entry> models) {
  /** The longest model name (the router's limit on {@code model}). */
  public static final int MAX_NAME_LENGTH = 256;
  /** The most entries a file may hold. */
  public static final int MAX_MODELS = 4096;
  /** The largest models file read. */
  public static final long MAX_FILE_BYTES = 4L << 20;

  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final Set<String> KEYS = Set.of("name", "tokenizer", "chat_template");

  /**
   * One model. {@code tokenizer} is null for a model routed in approximate mode; {@code chatTemplate} is null when the
   * template comes from the tokenizer's directory (or there is none).
   */
  public record Entry(String name, Path tokenizer, Path chatTemplate) {
    public boolean approximate() {
      return tokenizer == null;
    }
  }

  public ModelsFile {
    models = List.copyOf(models);
  }

  /** Reads and validates a models file; {@link ModelsFileException} says what is wrong and where. */
  public static ModelsFile read(Path file) throws ModelsFileException {
    JsonNode root;
    try {
      if (Files.size(file) > MAX_FILE_BYTES) {
        throw new ModelsFileException(file + ": larger than " + MAX_FILE_BYTES + " bytes");
      }
      root = YAML.readTree(file.toFile());
    } catch (ModelsFileException e) {
      throw e;
    } catch (IOException e) {
      throw new ModelsFileException(file + ": cannot be read as YAML: " + firstLine(e.getMessage()), e);
    }
    if (root == null || !root.isObject() || !root.has("models")) {
      throw new ModelsFileException(file + ": expected a mapping with a 'models' list");
    }
    for (Iterator<String> keys = root.fieldNames(); keys.hasNext(); ) {
      String key = keys.next();
      if (!key.equals("models")) {
        throw new ModelsFileException(file + ": unknown key '" + Inputs.echo(key) + "' (only 'models')");
      }
    }
    JsonNode list = root.get("models");
    if (!list.isArray()) {
      throw new ModelsFileException(file + ": 'models' must be a list");
    }
    if (list.size() > MAX_MODELS) {
      throw new ModelsFileException(file + ": " + list.size() + " models, at most " + MAX_MODELS);
    }
    Path base = file.toAbsolutePath().getParent();
    List<Entry> entries = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < list.size(); i++) {
      JsonNode item = list.get(i);
      String where = file + ": models[" + i + "]";
      if (!item.isObject()) {
        throw new ModelsFileException(where + ": expected a mapping with name, tokenizer, chat_template");
      }
      JsonNode name = item.get("name");
      if (name == null || !name.isTextual() || name.asText().isBlank()) {
        throw new ModelsFileException(where + ": 'name' is required (a string)");
      }
      String model = name.asText();
      where = where + " (" + Inputs.echo(model) + ")";
      if (model.length() > MAX_NAME_LENGTH) {
        throw new ModelsFileException(where + ": the name is longer than " + MAX_NAME_LENGTH + " characters");
      }
      if (!names.add(model)) {
        throw new ModelsFileException(where + ": the name appears twice");
      }
      for (Iterator<String> keys = item.fieldNames(); keys.hasNext(); ) {
        String key = keys.next();
        if (!KEYS.contains(key)) {
          throw new ModelsFileException(where + ": unknown key '" + Inputs.echo(key)
              + "' (name, tokenizer, chat_template)");
        }
      }
      Path tokenizer = path(item, "tokenizer", base, where);
      if (tokenizer != null) {
        Path json = Files.isDirectory(tokenizer) ? tokenizer.resolve("tokenizer.json") : tokenizer;
        if (!Files.isRegularFile(json)) {
          throw new ModelsFileException(where + ": tokenizer " + json + " does not exist");
        }
      }
      Path template = path(item, "chat_template", base, where);
      if (template != null && !Files.isRegularFile(template)) {
        throw new ModelsFileException(where + ": chat_template " + template + " does not exist");
      }
      if (template != null && tokenizer == null) {
        throw new ModelsFileException(where + ": chat_template needs a tokenizer (approximate mode uses none)");
      }
      entries.add(new Entry(model, tokenizer, template));
    }
    return new ModelsFile(file, entries);
  }

  private static Path path(JsonNode item, String key, Path base, String where) throws ModelsFileException {
    JsonNode value = item.get(key);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isTextual() || value.asText().isBlank()) {
      throw new ModelsFileException(where + ": '" + key + "' must be a path");
    }
    return base.resolve(value.asText()).normalize();
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "";
    }
    int newline = message.indexOf('\n');
    return newline < 0 ? message : message.substring(0, newline);
  }
}
