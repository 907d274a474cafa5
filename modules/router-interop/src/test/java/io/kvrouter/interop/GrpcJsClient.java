package io.kvrouter.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.grpc.Status;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code @grpc/grpc-js} (npm) with {@code @grpc/proto-loader} loading the repository's proto/: one
 * {@code node grpc-js/client.js --stdin} process, one JSON line per call each way. Requests go out as proto3 JSON
 * with proto field names (what proto-loader's {@code keepCase} expects); answers come back as proto-loader objects
 * (64-bit integers as strings, enums as names) and are parsed into the generated Java message for the assertions.
 */
final class GrpcJsClient implements InteropClient {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String EOF = "\u0000EOF";
  /** How long past a call's own deadline we wait for the process's answer before failing (never hang). */
  private static final long ANSWER_GRACE_MILLIS = 15_000;

  private final String target;
  private final Process process;
  private final Writer stdin;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final AtomicLong ids = new AtomicLong();
  private final Path log;

  GrpcJsClient(String host, int port, String logName) {
    this.target = host + ":" + port;
    Path dir = directory("kvrouter.interop.grpc-js.dir", "grpc-js");
    Path script = dir.resolve("client.js");
    if (!Files.isDirectory(dir.resolve("node_modules/@grpc/grpc-js"))) {
      throw new IllegalStateException("@grpc/grpc-js is not installed in " + dir + ": run `npm ci` there (the Maven "
          + "build of router-interop does it in generate-test-resources)");
    }
    this.log = directory("kvrouter.interop.log.dir", "target").resolve(logName + ".log");
    ProcessBuilder builder = new ProcessBuilder("node", script.toString(), "--stdin")
        .directory(dir.toFile())
        .redirectError(ProcessBuilder.Redirect.to(log.toFile()));
    builder.environment().put("KVROUTER_PROTO_DIR", directory("kvrouter.interop.proto.dir", "../../proto").toString());
    // the process exits by itself after this long, whatever the test does
    builder.environment().put("KVROUTER_INTEROP_HARD_TIMEOUT_MS", "900000");
    try {
      Files.createDirectories(log.getParent());
      this.process = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("could not start node (Node.js 18+ must be on the PATH)", e);
    }
    this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    Thread reader = new Thread(() -> {
      try (BufferedReader out = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
          lines.add(line);
        }
      } catch (IOException e) {
        // the process went away: reported as EOF below
      } finally {
        lines.add(EOF);
      }
    }, "grpc-js-reader-" + logName);
    reader.setDaemon(true);
    reader.start();
  }

  private static Path directory(String property, String fallback) {
    return Path.of(Optional.ofNullable(System.getProperty(property)).orElse(fallback)).toAbsolutePath().normalize();
  }

  @Override
  public String name() {
    return "grpc-js";
  }

  @Override
  public synchronized Reply call(Call call) {
    String id = Long.toString(ids.incrementAndGet());
    String line = exchange(request(call, id), call.timeout(), call.service() + "." + call.method());
    return parse(line, id, call);
  }

  @Override
  public synchronized List<Reply> callTogether(List<Call> calls) {
    ArrayNode requests = JSON.createArrayNode();
    List<String> callIds = new ArrayList<>();
    Duration longest = Duration.ZERO;
    for (Call call : calls) {
      String id = Long.toString(ids.incrementAndGet());
      callIds.add(id);
      requests.add(request(call, id));
      longest = call.timeout().compareTo(longest) > 0 ? call.timeout() : longest;
    }
    String line = exchange(requests, longest, calls.size() + " calls together");
    try {
      JsonNode results = JSON.readTree(line);
      List<Reply> replies = new ArrayList<>();
      for (int i = 0; i < calls.size(); i++) {
        replies.add(parse(JSON.writeValueAsString(results.get(i)), callIds.get(i), calls.get(i)));
      }
      return replies;
    } catch (IOException e) {
      throw new AssertionError("grpc-js answer is not JSON: " + line, e);
    }
  }

  private ObjectNode request(Call call, String id) {
    ObjectNode request = JSON.createObjectNode();
    request.put("id", id);
    request.put("target", target);
    request.put("service", call.service());
    request.put("method", call.method());
    try {
      request.set("request", JSON.readTree(
          JsonFormat.printer().preservingProtoFieldNames().omittingInsignificantWhitespace().print(call.request())));
    } catch (IOException e) {
      throw new AssertionError(e);
    }
    ObjectNode metadata = request.putObject("metadata");
    call.metadata().forEach(metadata::put);
    request.put("timeout_ms", call.timeout().toMillis());
    return request;
  }

  /** Writes one input line and waits for its answer line. */
  private String exchange(JsonNode input, Duration timeout, String what) {
    String line;
    try {
      stdin.write(JSON.writeValueAsString(input));
      stdin.write('\n');
      stdin.flush();
      line = lines.poll(timeout.toMillis() + ANSWER_GRACE_MILLIS, TimeUnit.MILLISECONDS);
    } catch (IOException e) {
      throw new AssertionError("grpc-js client failed (see " + log + ")", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
    if (line == null || line.equals(EOF)) {
      if (line != null) {
        lines.add(EOF);
      }
      throw new AssertionError("grpc-js client gave no answer to " + what
          + (line == null ? " in time" : ": the process ended") + " (see " + log + ")");
    }
    return line;
  }

  private static Reply parse(String line, String id, Call call) {
    try {
      JsonNode result = JSON.readTree(line);
      if (!id.equals(result.path("id").asText())) {
        throw new AssertionError("answer to another call: " + line);
      }
      int code = result.path("code").asInt(-1);
      if (code < 0) {
        throw new AssertionError("grpc-js client could not make the call: " + result.path("details").asText());
      }
      Map<String, String> headers = strings(result.path("headers"));
      Map<String, String> trailers = strings(result.path("trailers"));
      JsonNode reason = result.path("reason");
      Message response = null;
      if (code == 0) {
        Message.Builder builder = call.responsePrototype().newBuilderForType();
        JsonFormat.parser().ignoringUnknownFields().merge(JSON.writeValueAsString(result.get("response")), builder);
        response = builder.build();
      }
      return new Reply(Status.fromCodeValue(code).getCode(),
          code == 0 ? null : result.path("details").asText(null),
          reason.isTextual() ? reason.asText() : null, headers, trailers, response);
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError("grpc-js answer does not parse as " + call.responsePrototype().getDescriptorForType()
          .getFullName() + ": " + line, e);
    } catch (IOException e) {
      throw new AssertionError("grpc-js answer is not JSON: " + line, e);
    }
  }

  private static Map<String, String> strings(JsonNode object) {
    Map<String, String> out = new TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = object.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> entry = it.next();
      out.put(entry.getKey(), entry.getValue().asText());
    }
    return out;
  }

  @Override
  public void close() {
    try {
      stdin.close();
    } catch (IOException e) {
      // already gone
    }
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
