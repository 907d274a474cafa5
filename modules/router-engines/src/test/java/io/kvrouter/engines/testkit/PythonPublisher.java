package io.kvrouter.engines.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The independent engine publisher ({@code src/test/python/kv_publisher.py}, pyzmq + msgspec, the engines' own
 * structs) as a child process driven over stdin/stdout. Its Python is {@code KVROUTER_PYTHON}, else the repository's
 * {@code .venv/bin/python} ({@code bin/python-env} makes it).
 */
public final class PythonPublisher implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long ANSWER_SECONDS = 30;

  private final Process process;
  private final OutputStream in;
  private final BufferedReader out;
  private final ExecutorService reader = Executors.newSingleThreadExecutor(runnable -> {
    Thread thread = new Thread(runnable, "kv-publisher-reader");
    thread.setDaemon(true);
    return thread;
  });
  private final int pubPort;
  private final int replayPort;

  private PythonPublisher(List<String> command) throws IOException {
    process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    in = process.getOutputStream();
    out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    JsonNode ready = read();
    pubPort = ready.get("pub_port").asInt();
    replayPort = ready.get("replay_port").asInt();
  }

  /** Starts a publisher: {@code encoding} one of vllm-array, vllm-mixed, vllm-map, sglang-array. */
  public static PythonPublisher start(String encoding, int dpSize, String... extra) throws IOException {
    List<String> command = new ArrayList<>(List.of(python(), script("kv_publisher.py").toString(), "--encoding",
        encoding, "--dp-size", Integer.toString(dpSize)));
    command.addAll(List.of(extra));
    return new PythonPublisher(command);
  }

  public static String python() {
    String configured = System.getenv("KVROUTER_PYTHON");
    if (configured != null && !configured.isBlank()) {
      return configured;
    }
    Path venv = repoRoot().resolve(".venv/bin/python");
    if (Files.isExecutable(venv)) {
      return venv.toString();
    }
    throw new IllegalStateException("the engine publisher needs Python with pyzmq and msgspec: set KVROUTER_PYTHON "
        + "or run bin/python-env (it creates .venv from requirements-test.txt)");
  }

  public static Path script(String name) {
    String dir = System.getProperty("kvrouter.engines.python-dir");
    Path base = dir != null ? Path.of(dir) : repoRoot().resolve("modules/router-engines/src/test/python");
    return base.resolve(name);
  }

  static Path repoRoot() {
    String root = System.getProperty("kvrouter.repo-root");
    if (root != null) {
      return Path.of(root);
    }
    Path here = Path.of("").toAbsolutePath();
    while (here != null && !Files.exists(here.resolve("requirements-test.txt"))) {
      here = here.getParent();
    }
    return here == null ? Path.of("").toAbsolutePath() : here;
  }

  public String kvEvents() {
    return "tcp://127.0.0.1:" + pubPort;
  }

  public String kvEventsReplay() {
    return "tcp://127.0.0.1:" + replayPort;
  }

  /** Sends a command and returns its answer (failing the test on an error answer). */
  public JsonNode command(ObjectNode command) {
    try {
      in.write((command.toString() + "\n").getBytes(StandardCharsets.UTF_8));
      in.flush();
      JsonNode answer = read();
      if (!answer.path("ok").asBoolean()) {
        throw new IllegalStateException("publisher refused " + command + ": " + answer);
      }
      return answer;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Publishes one batch of {@code events} on {@code rank} (live: also on the PUB socket); returns its seq. */
  public long batch(int rank, boolean live, ObjectNode... events) {
    ObjectNode command = JSON.createObjectNode().put("op", "batch").put("rank", rank).put("live", live);
    ArrayNode list = command.putArray("events");
    for (ObjectNode event : events) {
      list.add(event);
    }
    return command(command).get("seq").asLong();
  }

  public long batch(ObjectNode... events) {
    return batch(0, true, events);
  }

  /** One BlockStored of {@code blocks} blocks; hashes first_hash + i (as 32-byte strings with bytesHashes). */
  public long chain(int rank, int blocks, int blockSize, int firstToken, java.math.BigInteger firstHash,
      java.math.BigInteger parent, boolean bytesHashes) {
    ObjectNode command = JSON.createObjectNode().put("op", "chain").put("rank", rank).put("blocks", blocks)
        .put("block_size", blockSize).put("first_token", firstToken).put("bytes_hashes", bytesHashes)
        .put("first_hash", firstHash);
    if (parent != null) {
      command.put("parent", parent);
    } else {
      command.putNull("parent");
    }
    return command(command).get("seq").asLong();
  }

  public void forget(int rank, long below) {
    command(JSON.createObjectNode().put("op", "forget").put("rank", rank).put("below", below));
  }

  /** The rank's next {@code count} replay requests are read and never answered (a busy or stalled engine). */
  public void ignoreReplays(int rank, int count) {
    command(JSON.createObjectNode().put("op", "ignore_replays").put("rank", rank).put("count", count));
  }

  public void restart() {
    command(JSON.createObjectNode().put("op", "restart"));
  }

  public void raw(int rank, String... hexFrames) {
    ObjectNode command = JSON.createObjectNode().put("op", "raw").put("rank", rank);
    ArrayNode frames = command.putArray("frames");
    for (String frame : hexFrames) {
      frames.add(frame);
    }
    command(command);
  }

  public long rawPayload(int rank, String payloadHex) {
    return command(JSON.createObjectNode().put("op", "raw_payload").put("rank", rank).put("payload_hex", payloadHex))
        .get("seq").asLong();
  }

  private JsonNode read() throws IOException {
    Future<String> line = reader.submit(out::readLine);
    try {
      String text = line.get(ANSWER_SECONDS, TimeUnit.SECONDS);
      if (text == null) {
        throw new IOException("the publisher exited (exit code " + process.waitFor() + ")");
      }
      return JSON.readTree(text);
    } catch (IOException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException("no answer from the publisher", e);
    }
  }

  @Override
  public void close() {
    try {
      in.write("{\"op\": \"quit\"}\n".getBytes(StandardCharsets.UTF_8));
      in.flush();
    } catch (IOException e) {
      // already gone
    }
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
    reader.shutdownNow();
  }
}
