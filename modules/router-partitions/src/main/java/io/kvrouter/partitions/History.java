package io.kvrouter.partitions;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The run's history: every client call, appended as it completes, and the run's clock (ms since it started). */
public final class History {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final long startNanos = System.nanoTime();
  private final List<Op> ops = new ArrayList<>();

  public double nowMs() {
    return (System.nanoTime() - startNanos) / 1e6;
  }

  /** Appends a completed call, numbering it. */
  public synchronized Op add(String process, int node, Op.F f, String requestId, long attemptIn, String regionIn,
      boolean global, double invokeMs, Op.Type type, long attempt, String worker, String region, boolean replay,
      boolean applied, String error) {
    Op op = new Op(ops.size(), process, node, f, requestId, attemptIn, regionIn, global, invokeMs, nowMs(), type,
        attempt, worker, region, replay, applied, error);
    ops.add(op);
    return op;
  }

  public synchronized List<Op> ops() {
    return List.copyOf(ops);
  }

  /** Writes the history as JSON lines (one Op a line), for `partitions check`. */
  public static void write(List<Op> ops, Path file) {
    try (var out = Files.newBufferedWriter(file)) {
      for (Op op : ops) {
        out.write(JSON.writeValueAsString(op));
        out.newLine();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static List<Op> read(Path file) {
    try {
      List<Op> ops = new ArrayList<>();
      for (String line : Files.readAllLines(file)) {
        if (!line.isBlank()) {
          ops.add(JSON.readValue(line, Op.class));
        }
      }
      return ops;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
