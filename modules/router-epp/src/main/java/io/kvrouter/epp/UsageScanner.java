package io.kvrouter.epp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The token usage of a response as the engine reports it, read from the body chunks the picker relays: a stream's
 * last {@code data:} event that carries a {@code usage} object (vLLM sends it with {@code stream_options.include_usage}),
 * or a JSON answer's {@code usage}. Reads at most {@code maxBytes} of one line (a stream) or of the answer; beyond
 * that, nothing is counted. Not thread-safe: one response's chunks, in order.
 */
final class UsageScanner {
  /** What the engine reported; -1 where absent. */
  record Usage(long promptTokens, long completionTokens, long cachedTokens) {}

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final byte[] USAGE = "\"usage\"".getBytes(StandardCharsets.US_ASCII);

  private final boolean sse;
  private final long maxBytes;
  private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
  private boolean overflow;
  private Usage last;

  UsageScanner(boolean sse, long maxBytes) {
    this.sse = sse;
    this.maxBytes = maxBytes;
  }

  void feed(byte[] chunk) {
    if (maxBytes == 0) {
      return;
    }
    if (!sse) {
      if (!overflow && pending.size() + (long) chunk.length <= maxBytes) {
        pending.write(chunk, 0, chunk.length);
      } else {
        overflow = true;
      }
      return;
    }
    int start = 0;
    for (int i = 0; i < chunk.length; i++) {
      if (chunk[i] == '\n') {
        append(chunk, start, i - start);
        line();
        start = i + 1;
      }
    }
    append(chunk, start, chunk.length - start);
  }

  /** The usage reported, or null; call after the last chunk. */
  Usage finish() {
    if (sse) {
      line();
    } else if (!overflow && pending.size() > 0) {
      last = usageOf(pending.toByteArray(), 0, pending.size());
    }
    return last;
  }

  private void append(byte[] bytes, int offset, int length) {
    if (overflow || length == 0) {
      return;
    }
    if (pending.size() + (long) length > maxBytes) {
      overflow = true;
      return;
    }
    pending.write(bytes, offset, length);
  }

  private void line() {
    byte[] line = pending.toByteArray();
    boolean skipped = overflow;
    pending.reset();
    overflow = false;
    if (skipped || line.length < 6 || !startsWith(line, "data:") || indexOf(line, USAGE) < 0) {
      return;
    }
    Usage usage = usageOf(line, 5, line.length - 5);
    if (usage != null) {
      last = usage;
    }
  }

  private static Usage usageOf(byte[] bytes, int offset, int length) {
    try {
      JsonNode usage = JSON.readTree(bytes, offset, length).path("usage");
      if (!usage.isObject()) {
        return null;
      }
      return new Usage(usage.path("prompt_tokens").asLong(-1), usage.path("completion_tokens").asLong(-1),
          usage.path("prompt_tokens_details").path("cached_tokens").asLong(-1));
    } catch (java.io.IOException | RuntimeException e) {
      return null; // not JSON, or not the shape we read: nothing to count
    }
  }

  private static boolean startsWith(byte[] bytes, String prefix) {
    for (int i = 0; i < prefix.length(); i++) {
      if (bytes[i] != prefix.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  private static int indexOf(byte[] bytes, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= bytes.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (bytes[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
