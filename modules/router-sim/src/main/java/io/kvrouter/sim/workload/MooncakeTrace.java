package io.kvrouter.sim.workload;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The public Mooncake trace format: one JSON object per line, {@code {"timestamp": ms, "input_length": tokens,
 * "output_length": tokens, "hash_ids": [...]}}, where each hash id names one block of {@value #BLOCK_TOKENS} prompt
 * tokens and two requests with the same leading ids share that prefix. {@code hash_ids} covers the prompt:
 * ceil(input_length / 512) ids, the last block possibly partial. Other fields are ignored.
 */
public final class MooncakeTrace {
  /** Tokens per hash id in the Mooncake format. */
  public static final int BLOCK_TOKENS = 512;

  private static final ObjectMapper JSON = new ObjectMapper();

  /** One request of the trace. */
  public record Entry(long timestampMillis, int inputLength, int outputLength, long[] hashIds) {}

  /** A line that is not a valid trace entry; the message names the line. */
  public static final class TraceFormatException extends IllegalArgumentException {
    public TraceFormatException(String source, int line, String problem) {
      super(source + ":" + line + ": " + problem);
    }
  }

  private MooncakeTrace() {}

  public static List<Entry> read(Path file) throws IOException {
    try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      return read(reader, file.toString());
    }
  }

  /** Parses every non-blank line; the first bad one throws {@link TraceFormatException}. */
  public static List<Entry> read(BufferedReader reader, String source) throws IOException {
    List<Entry> entries = new ArrayList<>();
    String line;
    int number = 0;
    while ((line = reader.readLine()) != null) {
      number++;
      if (!line.isBlank()) {
        entries.add(parse(line, source, number));
      }
    }
    return entries;
  }

  static Entry parse(String line, String source, int number) {
    JsonNode node;
    try {
      node = JSON.readTree(line);
    } catch (JsonProcessingException e) {
      throw new TraceFormatException(source, number, "not JSON: " + e.getOriginalMessage());
    }
    if (node == null || !node.isObject()) {
      throw new TraceFormatException(source, number, "expected a JSON object");
    }
    long timestamp = integer(node, "timestamp", source, number);
    long input = integer(node, "input_length", source, number);
    long output = integer(node, "output_length", source, number);
    if (input < 1 || input > Integer.MAX_VALUE) {
      throw new TraceFormatException(source, number, "input_length must be at least 1, got " + input);
    }
    if (output > Integer.MAX_VALUE) {
      throw new TraceFormatException(source, number, "output_length too large: " + output);
    }
    JsonNode ids = node.get("hash_ids");
    if (ids == null || !ids.isArray()) {
      throw new TraceFormatException(source, number, "missing array field 'hash_ids'");
    }
    long expected = (input + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
    if (ids.size() != expected) {
      throw new TraceFormatException(source, number, "input_length " + input + " needs " + expected
          + " hash_ids (one per " + BLOCK_TOKENS + " tokens), got " + ids.size());
    }
    long[] hashIds = new long[ids.size()];
    for (int i = 0; i < hashIds.length; i++) {
      JsonNode id = ids.get(i);
      if (!id.canConvertToExactIntegral() || id.asLong() < 0) {
        throw new TraceFormatException(source, number, "hash_ids[" + i + "] is not a non-negative integer: " + id);
      }
      hashIds[i] = id.asLong();
    }
    return new Entry(timestamp, (int) input, (int) output, hashIds);
  }

  private static long integer(JsonNode node, String field, String source, int number) {
    JsonNode value = node.get(field);
    if (value == null) {
      throw new TraceFormatException(source, number, "missing field '" + field + "'");
    }
    if (!value.canConvertToExactIntegral() || value.asLong() < 0) {
      throw new TraceFormatException(source, number, "'" + field + "' is not a non-negative integer: " + value);
    }
    return value.asLong();
  }

  /** Writes entries in the same format. */
  public static void write(List<Entry> entries, Writer out) throws IOException {
    for (Entry e : entries) {
      out.write("{\"timestamp\": " + e.timestampMillis() + ", \"input_length\": " + e.inputLength()
          + ", \"output_length\": " + e.outputLength() + ", \"hash_ids\": [");
      for (int i = 0; i < e.hashIds().length; i++) {
        out.write((i == 0 ? "" : ", ") + e.hashIds()[i]);
      }
      out.write("]}\n");
    }
  }
}
