package io.kvrouter.front;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvrouter.front.testkit.FrontNode;
import io.kvrouter.front.testkit.ScriptedEngine;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Bad input and overload, each answered with the status an OpenAI client expects and an OpenAI error object, and
 * nothing booked after any of it: hostile bodies (deep JSON, huge strings, wrong types, invalid UTF-8), a body over
 * the limit, a body that never finishes, headers over the limits, slow clients, an unknown model, no capacity, the
 * queue limit and the queue deadline.
 */
class BadInputTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static FrontNode node;
  private static ScriptedEngine engine;
  private static final String MODEL = "org/bad-input";

  @BeforeAll
  static void start() {
    node = FrontNode.start("""
        kvrouter.front.max-body-bytes = 64k
        kvrouter.front.body-timeout = 1s
        kvrouter.front.book-timeout = 500ms
        kvrouter.front.max-json-depth = 32
        kvrouter.front.first-token-timeout = 20s
        """);
    engine = ScriptedEngine.start(node.kit.system()).stream(2, Duration.ZERO, Duration.ofMillis(1));
    node.register(MODEL, "w1", engine.url());
  }

  @AfterAll
  static void stop() {
    engine.close();
    node.close();
  }

  private static HttpResponse<String> post(String path, byte[] body) throws Exception {
    return ForwardingTest.HTTP.send(HttpRequest.newBuilder(URI.create(node.url() + path))
        .header("content-type", "application/json").timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> post(String body) throws Exception {
    return post("/v1/chat/completions", body.getBytes(StandardCharsets.UTF_8));
  }

  /** The status and the OpenAI error object's code; the body must be {"error": {message, type, param, code}}. */
  private static String rejected(HttpResponse<String> response, int status) throws Exception {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
    JsonNode error = JSON.readTree(response.body()).get("error");
    assertThat(error).as(response.body()).isNotNull();
    assertThat(error.get("message").asText()).isNotBlank();
    assertThat(error.has("type") && error.has("param") && error.has("code")).isTrue();
    return error.get("code").asText();
  }

  private static void nothingBooked() {
    assertThat(node.liveBookings(MODEL)).isZero();
    assertThat(engine.seenList()).isEmpty();
  }

  @Test
  void hostileBodiesAre400sAndBookNothing() throws Exception {
    engine.seen.clear();
    assertThat(rejected(post("{\"model\": \"" + MODEL + "\", \"messages\": ["), 400)).isEqualTo("MALFORMED_JSON");
    assertThat(rejected(post("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}"), 400))
        .isEqualTo("MISSING_MODEL");
    assertThat(rejected(post("[1, 2, 3]"), 400)).isEqualTo("INVALID_BODY");
    assertThat(rejected(post("{\"model\": 7, \"messages\": []}"), 400)).isEqualTo("INVALID_BODY");
    assertThat(rejected(post("{\"model\": \"" + MODEL + "\", \"messages\": \"hi\"}"), 400)).isEqualTo("INVALID_BODY");
    assertThat(rejected(post("{\"model\": \"" + MODEL + "\", \"messages\": [7]}"), 400)).isEqualTo("INVALID_BODY");
    assertThat(rejected(post("{\"model\": \"" + MODEL + "\", \"stream\": \"yes\", \"messages\": []}"), 400))
        .isEqualTo("INVALID_BODY");
    assertThat(rejected(post("{\"model\": \"" + MODEL + "\", \"messages\": [{\"role\": \"user\", \"content\": 5}]}"),
        400)).isIn("INVALID_BODY");
    assertThat(rejected(post("/v1/completions", ("{\"model\": \"" + MODEL + "\", \"prompt\": [1, -2]}")
        .getBytes(StandardCharsets.UTF_8)), 400)).isEqualTo("INVALID_BODY");
    assertThat(rejected(post("{\"model\": \"" + MODEL + "\", \"model\": \"other\", \"messages\": []}"), 400))
        .isEqualTo("MALFORMED_JSON");
    assertThat(rejected(post("{\"model\": \"" + "m".repeat(300) + "\", \"messages\": []}"), 400))
        .isEqualTo("FIELD_TOO_LONG");
    // deep JSON: nesting over the limit is refused while parsing
    String deep = "[".repeat(5_000) + "]".repeat(5_000);
    assertThat(rejected(post("{\"model\": \"" + MODEL + "\", \"messages\": " + deep + "}"), 400))
        .isEqualTo("MALFORMED_JSON");
    // invalid UTF-8 in a string
    byte[] head = ("{\"model\": \"" + MODEL + "\", \"messages\": [{\"role\": \"user\", \"content\": \"")
        .getBytes(StandardCharsets.UTF_8);
    byte[] tail = "\"}]}".getBytes(StandardCharsets.UTF_8);
    byte[] invalid = new byte[head.length + 3 + tail.length];
    System.arraycopy(head, 0, invalid, 0, head.length);
    invalid[head.length] = (byte) 0xC3;
    invalid[head.length + 1] = (byte) 0x28;
    invalid[head.length + 2] = (byte) 0xFF;
    System.arraycopy(tail, 0, invalid, head.length + 3, tail.length);
    assertThat(rejected(post("/v1/chat/completions", invalid), 400)).isEqualTo("MALFORMED_JSON");
    // a non-JSON content type
    HttpResponse<String> form = ForwardingTest.HTTP.send(HttpRequest.newBuilder(URI.create(node.url()
            + "/v1/completions")).header("content-type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString("model=x")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(rejected(form, 400)).isEqualTo("UNSUPPORTED_MEDIA_TYPE");
    nothingBooked();
  }

  @Test
  void aHugeStringOverTheBodyLimitIs413AndADeclaredOneIsRefusedUnread() throws Exception {
    engine.seen.clear();
    String huge = "{\"model\": \"" + MODEL + "\", \"messages\": [{\"role\": \"user\", \"content\": \""
        + "x".repeat(200_000) + "\"}]}";
    assertThat(rejected(post(huge), 413)).isEqualTo("BODY_TOO_LARGE");
    // declared over the limit but within the drain bound: read and dropped, so the connection stays open
    String drained = raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 200000\r\n\r\n" + "x".repeat(200_000), Duration.ofSeconds(10));
    assertThat(drained).startsWith("HTTP/1.1 413").contains("BODY_TOO_LARGE");
    assertThat(drained.toLowerCase(java.util.Locale.ROOT)).doesNotContain("connection: close");
    // a Content-Length over the limit, with no body sent at all: answered at once
    String answer = raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 999999999\r\n\r\n", Duration.ofSeconds(10));
    assertThat(answer).startsWith("HTTP/1.1 413").contains("BODY_TOO_LARGE");
    assertThat(answer.toLowerCase(java.util.Locale.ROOT)).contains("connection: close");
    nothingBooked();
  }

  @Test
  void aBodyThatNeverFinishesIs408AndTrickledHeadersAreBoundedByTheHeaderLimits() throws Exception {
    engine.seen.clear();
    // slowloris on the body: headers promise 100 bytes, 10 arrive, then nothing
    String answer = raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 100\r\n\r\n{\"model\":", Duration.ofSeconds(10));
    assertThat(answer).startsWith("HTTP/1.1 408").contains("BODY_TIMEOUT");
    // huge headers: one over the value limit, and more headers than the count limit
    String big = raw("GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + "a".repeat(10_000) + "\r\n\r\n",
        Duration.ofSeconds(10));
    assertThat(big).startsWith("HTTP/1.1 431").contains("HEADERS_TOO_LARGE");
    StringBuilder many = new StringBuilder("GET /v1/models HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < 100; i++) {
      many.append("X-H").append(i).append(": v\r\n");
    }
    assertThat(raw(many.append("\r\n").toString(), Duration.ofSeconds(10))).startsWith("HTTP/1.1 431");
    // slowloris on the headers: 50 clients trickling an endless header line; each is cut at the header limit
    // (bounded buffering) while a normal request is served meanwhile
    List<Socket> slow = new ArrayList<>();
    try {
      for (int i = 0; i < 50; i++) {
        Socket socket = new Socket("127.0.0.1", node.front.port());
        socket.getOutputStream().write("GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Slow: ".getBytes(StandardCharsets.US_ASCII));
        slow.add(socket);
      }
      HttpResponse<String> models = ForwardingTest.HTTP.send(HttpRequest.newBuilder(URI.create(node.url()
          + "/v1/models")).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(models.statusCode()).isEqualTo(200);
      assertThat(models.body()).contains(MODEL);
      byte[] kilobyte = "a".repeat(1024).getBytes(StandardCharsets.US_ASCII);
      Socket first = slow.get(0);
      String cut = null;
      for (int k = 0; k < 64 && cut == null; k++) { // at most 64 KiB: the limit is 8 KiB
        try {
          first.getOutputStream().write(kilobyte);
          first.getOutputStream().flush();
        } catch (java.io.IOException closed) {
          break;
        }
        if (first.getInputStream().available() > 0) {
          cut = new String(first.getInputStream().readNBytes(first.getInputStream().available()),
              StandardCharsets.UTF_8);
        }
      }
      if (cut == null) {
        first.setSoTimeout(10_000);
        cut = new String(first.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      }
      assertThat(cut).startsWith("HTTP/1.1 431");
    } finally {
      for (Socket socket : slow) {
        socket.close();
      }
    }
    nothingBooked();
  }

  @Test
  void anUnknownModelIs404() throws Exception {
    assertThat(rejected(post("{\"model\": \"nobody/here\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}"),
        404)).isEqualTo("UNKNOWN_MODEL");
    assertThat(node.routing.view("nobody/here")).isNull();
  }

  @Test
  void noCapacityIs503WithRetryAfterTheQueueLimit429AndTheQueueDeadline504() throws Exception {
    String model = "org/overload";
    try (ScriptedEngine slow = ScriptedEngine.start(node.kit.system()).stream(2, Duration.ofSeconds(5),
        Duration.ofMillis(1))) {
      node.register(model, "w1", slow.url());
      String body = "{\"model\": \"" + model + "\", \"prompt\": \"a prompt\", \"stream\": true}";
      // one request holds the only worker's prefill (its first token is 5 s away)
      node.setPolicy(model, "least_in_flight", Map.of("active_prefill_tokens_threshold", "0"));
      CompletableFuture<HttpResponse<String>> holder = ForwardingTest.HTTP.sendAsync(HttpRequest.newBuilder(
              URI.create(node.url() + "/v1/completions")).header("content-type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
      await().atMost(Duration.ofSeconds(5)).until(() -> node.liveBookings(model) == 1);
      HttpResponse<String> overloaded = post("/v1/completions", body.getBytes(StandardCharsets.UTF_8));
      assertThat(rejected(overloaded, 503)).isEqualTo("ALL_WORKERS_OVERLOADED");
      assertThat(overloaded.headers().firstValue("retry-after")).hasValue("1");
      // with a queue: a full queue is 429, a wait past the book timeout 504
      node.setPolicy(model, "least_in_flight", Map.of("active_prefill_tokens_threshold", "",
          "queue_threshold_frac", "0", "max_pending", "0"));
      HttpResponse<String> full = post("/v1/completions", body.getBytes(StandardCharsets.UTF_8));
      assertThat(rejected(full, 429)).isEqualTo("QUEUE_LIMIT");
      assertThat(full.headers().firstValue("retry-after")).hasValue("1");
      node.setPolicy(model, "least_in_flight", Map.of("queue_threshold_frac", "0", "max_pending", "8"));
      HttpResponse<String> late = post("/v1/completions", body.getBytes(StandardCharsets.UTF_8));
      assertThat(rejected(late, 504)).isIn("QUEUE_DEADLINE_EXCEEDED", "ADMISSION_TIMEOUT");
      assertThat(holder.get().statusCode()).isEqualTo(200);
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        assertThat(node.liveBookings(model)).isZero();
        assertThat(node.snapshot(model).pending()).isZero();
      });
    }
  }

  /**
   * The admission queue's headers reach the queue: a request naming a class whose queue takes none is refused 429
   * QUEUE_LIMIT naming that class, one without the header waits in the default class; a strict tier out of range is
   * 400 INVALID_SIZE. Nothing stays booked or queued.
   */
  @Test
  void theQueueHeadersNameTheClassAndTheTier() throws Exception {
    String model = "org/queue-headers";
    try (ScriptedEngine slow = ScriptedEngine.start(node.kit.system()).stream(2, Duration.ofSeconds(3),
        Duration.ofMillis(1))) {
      node.register(model, "w1", slow.url());
      node.setPolicy(model, "least_in_flight", Map.of("queue_threshold_frac", "0",
          "class.batch", "requests_per_worker=0"));
      String body = "{\"model\": \"" + model + "\", \"prompt\": \"a prompt\", \"stream\": true}";
      CompletableFuture<HttpResponse<String>> holder = ForwardingTest.HTTP.sendAsync(HttpRequest.newBuilder(
              URI.create(node.url() + "/v1/completions")).header("content-type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
      await().atMost(Duration.ofSeconds(5)).until(() -> node.liveBookings(model) == 1);
      HttpResponse<String> refused = ForwardingTest.HTTP.send(HttpRequest.newBuilder(
              URI.create(node.url() + "/v1/completions")).header("content-type", "application/json")
          .header("x-kvrouter-policy-class", "batch").timeout(Duration.ofSeconds(30))
          .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(rejected(refused, 429)).isEqualTo("QUEUE_LIMIT");
      assertThat(refused.body()).contains("'batch'");
      HttpResponse<String> badTier = ForwardingTest.HTTP.send(HttpRequest.newBuilder(
              URI.create(node.url() + "/v1/completions")).header("content-type", "application/json")
          .header("x-kvrouter-strict-priority", "70000").timeout(Duration.ofSeconds(30))
          .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(rejected(badTier, 400)).isEqualTo("INVALID_SIZE");
      assertThat(node.snapshot(model).queue().classes()).filteredOn(c -> c.name().equals("batch"))
          .singleElement().satisfies(c -> assertThat(c.rejections()).containsEntry("QUEUE_LIMIT_REQUESTS", 1L));
      assertThat(holder.get().statusCode()).isEqualTo(200);
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        assertThat(node.liveBookings(model)).isZero();
        assertThat(node.snapshot(model).pending()).isZero();
      });
    }
  }

  /** Writes {@code request} on a fresh connection and reads until the server closes it or the answer is complete. */
  private static String raw(String request, Duration timeout) throws Exception {
    try (Socket socket = new Socket("127.0.0.1", node.front.port())) {
      socket.setSoTimeout((int) timeout.toMillis());
      OutputStream out = socket.getOutputStream();
      out.write(request.getBytes(StandardCharsets.UTF_8));
      out.flush();
      InputStream in = socket.getInputStream();
      ByteArrayOutputStream read = new ByteArrayOutputStream();
      byte[] buffer = new byte[8192];
      while (true) {
        int n;
        try {
          n = in.read(buffer);
        } catch (java.net.SocketException reset) {
          break;
        }
        if (n < 0) {
          break;
        }
        read.write(buffer, 0, n);
        String text = read.toString(StandardCharsets.UTF_8);
        int end = text.indexOf("\r\n\r\n");
        if (end >= 0) {
          int length = contentLength(text.substring(0, end));
          if (length >= 0 && text.length() >= end + 4 + length) {
            break;
          }
        }
      }
      return read.toString(StandardCharsets.UTF_8);
    }
  }

  private static int contentLength(String head) {
    for (String line : head.split("\r\n")) {
      if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
        return Integer.parseInt(line.substring(15).strip());
      }
    }
    return -1;
  }
}
