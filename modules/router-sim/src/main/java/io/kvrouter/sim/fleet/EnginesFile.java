package io.kvrouter.sim.fleet;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The engines file the router's engine connectors read ({@code KVROUTER_ENGINES}): {@code engines:} a list of
 * {model, worker_id, kind, base_url, metrics_url, kv_events, kv_events_replay, kv_events_topic, dp_size, block_size,
 * total_kv_blocks, max_num_batched_tokens, role}, keys exactly these ({@code role} only for a prefill or decode
 * engine).
 */
public final class EnginesFile {
  /** One engine's entry; {@code role} aggregated, prefill or decode (the key written only for the last two). */
  public record Entry(String model, String workerId, String host, int httpPort, int kvEventsPort, int kvReplayPort,
      String topic, int dpSize, int blockSize, int totalKvBlocks, int maxNumBatchedTokens, String role) {

    public Entry {
      role = role == null || role.isEmpty() ? "aggregated" : role;
    }

    /** An aggregated engine's entry. */
    public Entry(String model, String workerId, String host, int httpPort, int kvEventsPort, int kvReplayPort,
        String topic, int dpSize, int blockSize, int totalKvBlocks, int maxNumBatchedTokens) {
      this(model, workerId, host, httpPort, kvEventsPort, kvReplayPort, topic, dpSize, blockSize, totalKvBlocks,
          maxNumBatchedTokens, "aggregated");
    }

    public String baseUrl() {
      return "http://" + host + ":" + httpPort;
    }

    Map<String, Object> yaml() {
      Map<String, Object> map = new LinkedHashMap<>();
      map.put("model", model);
      map.put("worker_id", workerId);
      map.put("kind", "vllm");
      map.put("base_url", baseUrl());
      map.put("metrics_url", baseUrl() + "/metrics");
      if (kvEventsPort > 0) {
        map.put("kv_events", "tcp://" + host + ":" + kvEventsPort);
        if (kvReplayPort > 0) {
          map.put("kv_events_replay", "tcp://" + host + ":" + kvReplayPort);
        }
        map.put("kv_events_topic", topic);
      }
      map.put("dp_size", dpSize);
      map.put("block_size", blockSize);
      map.put("total_kv_blocks", totalKvBlocks);
      map.put("max_num_batched_tokens", maxNumBatchedTokens);
      if (!role.equals("aggregated")) {
        map.put("role", role);
      }
      return map;
    }
  }

  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory()
      .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
      .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
      .enable(YAMLGenerator.Feature.INDENT_ARRAYS_WITH_INDICATOR));

  private EnginesFile() {}

  public static String render(List<Entry> entries) throws IOException {
    List<Map<String, Object>> engines = new ArrayList<>();
    for (Entry entry : entries) {
      engines.add(entry.yaml());
    }
    return YAML.writeValueAsString(Map.of("engines", engines));
  }

  /** Written to a sibling temporary file, then moved over {@code file}: a reader never sees half a file. */
  public static void write(Path file, List<Entry> entries) throws IOException {
    Path absolute = file.toAbsolutePath();
    if (absolute.getParent() != null) {
      Files.createDirectories(absolute.getParent());
    }
    Path temporary = absolute.resolveSibling(absolute.getFileName() + ".tmp");
    Files.writeString(temporary, render(entries));
    Files.move(temporary, absolute, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }

  /** base_url and metrics_url of every engine in a file of this shape (the wall-clock driver's input). */
  public static List<Map<String, Object>> read(Path file) throws IOException {
    @SuppressWarnings("unchecked")
    Map<String, Object> root = YAML.readValue(file.toFile(), Map.class);
    Object engines = root == null ? null : root.get("engines");
    if (!(engines instanceof List<?> list)) {
      throw new IOException(file + ": expected a list under 'engines'");
    }
    List<Map<String, Object>> result = new ArrayList<>();
    for (Object item : list) {
      if (!(item instanceof Map<?, ?> map) || !(map.get("base_url") instanceof String)) {
        throw new IOException(file + ": every engine needs a base_url");
      }
      @SuppressWarnings("unchecked")
      Map<String, Object> entry = (Map<String, Object>) map;
      result.add(entry);
    }
    return result;
  }
}
