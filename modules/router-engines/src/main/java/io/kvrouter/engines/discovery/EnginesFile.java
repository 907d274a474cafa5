package io.kvrouter.engines.discovery;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The engines file ({@code KVROUTER_ENGINES}): YAML (JSON is YAML too) of the shape
 * <pre>
 * engines:
 *   - model: org/llama-8b
 *     worker_id: vllm-0
 *     kind: vllm
 *     base_url: http://127.0.0.1:8100
 *     ...
 * </pre>
 * with exactly the keys of {@link #KEYS}. An entry with an unknown key, a missing or invalid value, or the model and
 * worker id of an earlier entry is left out and named in {@link Parsed#problems()}; the others run.
 */
public final class EnginesFile {
  public static final List<String> KEYS = List.of("model", "worker_id", "kind", "base_url", "metrics_url",
      "kv_events", "kv_events_replay", "kv_events_topic", "dp_size", "block_size", "total_kv_blocks",
      "max_num_batched_tokens", "role");
  private static final Set<String> KEY_SET = Set.copyOf(KEYS);
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  /** The engines a file describes, and what was wrong with the entries left out. */
  public record Parsed(List<EngineSpec> engines, List<String> problems) {}

  /** A file that is not YAML, or not a map with an {@code engines} list. */
  public static final class UnreadableFileException extends Exception {
    UnreadableFileException(String message) {
      super(message, null, false, false);
    }
  }

  private EnginesFile() {}

  public static Parsed parse(String text) throws UnreadableFileException {
    JsonNode root;
    try {
      root = YAML.readTree(text);
    } catch (IOException e) {
      throw new UnreadableFileException("not YAML: " + firstLine(e.getMessage()));
    }
    if (root == null || root.isMissingNode() || root.isNull()) {
      return new Parsed(List.of(), List.of());
    }
    if (!root.isObject()) {
      throw new UnreadableFileException("the file must be a map with an 'engines' list");
    }
    List<String> problems = new ArrayList<>();
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!key.equals("engines")) {
        problems.add("unknown top-level key '" + key + "'");
      }
    }
    JsonNode list = root.get("engines");
    if (list == null || list.isNull()) {
      return new Parsed(List.of(), problems);
    }
    if (!list.isArray()) {
      throw new UnreadableFileException("'engines' must be a list");
    }
    Map<EngineKey, EngineSpec> engines = new LinkedHashMap<>();
    int index = 0;
    for (JsonNode entry : list) {
      index++;
      String where = "engines[" + (index - 1) + "]";
      if (!entry.isObject()) {
        problems.add(where + ": not a map");
        continue;
      }
      List<String> entryProblems = new ArrayList<>();
      Set<String> seen = new HashSet<>();
      for (Iterator<String> it = entry.fieldNames(); it.hasNext(); ) {
        String key = it.next();
        seen.add(key);
        if (!KEY_SET.contains(key)) {
          entryProblems.add("unknown key '" + key + "'");
        }
      }
      EngineSpec spec = EngineSpec.of(text(entry, "model", entryProblems), text(entry, "worker_id", entryProblems),
          kind(entry, entryProblems), text(entry, "base_url", entryProblems), text(entry, "metrics_url", entryProblems),
          text(entry, "kv_events", entryProblems), text(entry, "kv_events_replay", entryProblems),
          text(entry, "kv_events_topic", entryProblems), integer(entry, "dp_size", entryProblems),
          integer(entry, "block_size", entryProblems), integer(entry, "total_kv_blocks", entryProblems),
          integer(entry, "max_num_batched_tokens", entryProblems), role(entry, entryProblems));
      if (entryProblems.isEmpty()) {
        entryProblems.addAll(spec.problems());
      }
      if (entryProblems.isEmpty() && engines.containsKey(spec.key())) {
        entryProblems.add("model '" + spec.model() + "' worker_id '" + spec.workerId()
            + "' repeats an earlier entry");
      }
      if (!entryProblems.isEmpty()) {
        String name = spec.workerId() == null ? where : where + " (" + spec.workerId() + ")";
        problems.add(name + ": " + String.join("; ", entryProblems));
        continue;
      }
      engines.put(spec.key(), spec);
    }
    return new Parsed(List.copyOf(engines.values()), List.copyOf(problems));
  }

  /** {@code role}: aggregated (the default), prefill or decode. */
  private static io.kvrouter.core.model.WorkerRole role(JsonNode entry, List<String> problems) {
    String value = text(entry, "role", problems);
    if (value == null) {
      return null;
    }
    io.kvrouter.core.model.WorkerRole role = roleNamed(value);
    if (role == null) {
      problems.add("role: must be " + ROLE_NAMES);
    }
    return role;
  }

  /** The role names an engine is described with (the file's {@code role}, a pod's {@code kvrouter.io/role}). */
  static final String ROLE_NAMES = "aggregated, prefill or decode";

  /** The role {@code name} ({@link #ROLE_NAMES}) names, or null for another name. */
  static io.kvrouter.core.model.WorkerRole roleNamed(String name) {
    return switch (name) {
      case "aggregated" -> io.kvrouter.core.model.WorkerRole.AGGREGATED;
      case "prefill" -> io.kvrouter.core.model.WorkerRole.PREFILL;
      case "decode" -> io.kvrouter.core.model.WorkerRole.DECODE;
      default -> null;
    };
  }

  private static String text(JsonNode entry, String key, List<String> problems) {
    JsonNode value = entry.get(key);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isValueNode() || value.isBoolean()) {
      problems.add(key + ": must be a string");
      return null;
    }
    return value.asText();
  }

  private static Integer integer(JsonNode entry, String key, List<String> problems) {
    JsonNode value = entry.get(key);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isIntegralNumber() || !value.canConvertToInt()) {
      problems.add(key + ": must be a whole number");
      return null;
    }
    return value.intValue();
  }

  private static EngineKind kind(JsonNode entry, List<String> problems) {
    String kind = text(entry, "kind", problems);
    if (kind == null) {
      problems.add("kind: required (vllm or sglang)");
      return null;
    }
    EngineKind parsed = EngineKind.parse(kind);
    if (parsed == null) {
      problems.add("kind: '" + kind + "' is neither vllm nor sglang");
    }
    return parsed;
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "";
    }
    int newline = message.indexOf('\n');
    return newline < 0 ? message : message.substring(0, newline);
  }
}
