package io.kvrouter.sim.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.math.BigInteger;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The engine server against software kvrouter did not write: the official OpenAI Python SDK, Prometheus's Python text
 * parser, and a pyzmq + msgpack subscriber with vLLM's semantics; and raw HTTP for disconnects and bad input.
 */
class EngineServerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private static final String MODEL = "org/llama-8b";

  private static SimEngineServer start(EngineConfig config, PromptTokenizer tokenizer) {
    return SimEngineServer.start(config, tokenizer);
  }

  private static SimEngineServer start(int kvBlocks, double timeScale) {
    return start(EngineConfig.loopback(MODEL, kvBlocks, 16, timeScale), new TokenIdsOnlyTokenizer(128_256));
  }

  private static String base(SimEngineServer server) {
    return "http://127.0.0.1:" + server.httpPort();
  }

  private static HttpResponse<String> post(SimEngineServer server, String path, String body) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create(base(server) + path))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
        .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String ids(int from, int count) {
    return IntStream.range(from, from + count).mapToObj(Integer::toString)
        .reduce((a, b) -> a + "," + b).map(s -> "[" + s + "]").orElse("[]");
  }

  /** One series' value from the engine's exposition, e.g. value(text, "vllm:num_requests_running", "0"). */
  private static double value(String metrics, String name, String engine) {
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{([^}]*)\\} (\\S+)$").matcher(metrics);
    while (m.find()) {
      if (m.group(1).contains("engine=\"" + engine + "\"")) {
        return Double.parseDouble(m.group(2));
      }
    }
    throw new AssertionError(name + " for engine " + engine + " not in\n" + metrics);
  }

  private static String metrics(SimEngineServer server) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create(base(server) + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
  }

  @Test
  void theOpenAiSdkGetsCompletionsStreamingAndNotUsageWithCachedTokensAndVllmErrors() throws Exception {
    try (SimEngineServer server = start(2_000, 50)) {
      PythonProgram.Result result = PythonProgram.run(120, "openai_client.py", base(server), MODEL,
          Integer.toString(server.config().maxModelLen()), "16");
      assertThat(result.exitCode()).as(result.stdout() + result.stderr()).isZero();
      assertThat(result.stdout()).contains("ok: chat without a tokenizer answers 400 naming --tokenizer", "all ok");
    }
  }

  @Test
  void theOpenAiSdkGetsChatCompletionsStreamingAndNotWhenTheEngineHasATokenizer() throws Exception {
    try (io.kvrouter.tokenizer.ModelTokenizer tiny = io.kvrouter.tokenizer.ModelTokenizer.load(
            PythonProgram.REPO.resolve("models/kvrouter-tiny"));
        SimEngineServer server = start(new EngineConfig(MODEL, "127.0.0.1", 0, 1, 2_000, 16, 4_000,
            EngineConfig.defaultLimits(2_000), io.kvrouter.sim.engine.TimingModel.llama8bOnH100(), 50, -1, -1,
            "kv-events", EngineConfig.KvEventEncoding.MAP, EngineConfig.ReplayFormat.TOPIC, 42, 16, 256,
            tiny.vocabularySize()), new ModelPromptTokenizer(tiny))) {
      PythonProgram.Result result = PythonProgram.run(120, "openai_client.py", base(server), MODEL,
          Integer.toString(server.config().maxModelLen()), "16", "chat");
      assertThat(result.exitCode()).as(result.stdout() + result.stderr()).isZero();
      assertThat(result.stdout()).contains("ok: chat, streaming and not", "all ok");
    }
  }

  @Test
  void metricsParseWithPrometheusOwnParserUnderVllmNamesTypesAndLabels() throws Exception {
    try (SimEngineServer server = start(EngineConfig.loopback(MODEL, 2_000, 16, 50).withDpSize(2),
        new TokenIdsOnlyTokenizer(128_256))) {
      String body = "{\"model\": \"" + MODEL + "\", \"prompt\": " + ids(0, 100) + ", \"max_tokens\": 5, "
          + "\"ignore_eos\": true}";
      for (int rank = 0; rank < 2; rank++) {
        for (int i = 0; i < 2; i++) {
          HttpResponse<String> answer = HTTP.send(HttpRequest.newBuilder(URI.create(base(server) + "/v1/completions"))
              .header("Content-Type", "application/json").header("X-data-parallel-rank", Integer.toString(rank))
              .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
          assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
        }
      }
      PythonProgram.Result result = PythonProgram.run(60, "metrics_families.py", base(server) + "/metrics");
      assertThat(result.exitCode()).as(result.stderr()).isZero();
      JsonNode parsed = JSON.readTree(result.stdout());
      assertThat(parsed.get("content_type").asText()).startsWith("text/plain; version=0.0.4");
      JsonNode families = parsed.get("families");
      record Expected(String family, String type) {}
      List<Expected> expected = List.of(new Expected("vllm:num_requests_running", "gauge"),
          new Expected("vllm:num_requests_waiting", "gauge"), new Expected("vllm:kv_cache_usage_perc", "gauge"),
          new Expected("vllm:cache_config_info", "gauge"), new Expected("vllm:prefix_cache_queries", "counter"),
          new Expected("vllm:prefix_cache_hits", "counter"), new Expected("vllm:prompt_tokens", "counter"),
          new Expected("vllm:generation_tokens", "counter"),
          new Expected("vllm:time_to_first_token_seconds", "histogram"),
          new Expected("vllm:e2e_request_latency_seconds", "histogram"));
      for (Expected e : expected) {
        JsonNode family = families.get(e.family());
        assertThat(family).as(e.family() + " in " + families.fieldNames()).isNotNull();
        assertThat(family.get("type").asText()).as(e.family()).isEqualTo(e.type());
        Set<String> engines = new HashSet<>();
        for (JsonNode sample : family.get("samples")) {
          JsonNode labels = sample.get(1);
          engines.add(labels.get("engine").asText());
          if (!e.family().equals("vllm:cache_config_info")) {
            assertThat(labels.get("model_name").asText()).as(e.family()).isEqualTo(MODEL);
          }
        }
        assertThat(engines).as(e.family()).containsExactlyInAnyOrder("0", "1");
      }
      for (JsonNode sample : families.get("vllm:cache_config_info").get("samples")) {
        assertThat(sample.get(1).get("block_size").asText()).isEqualTo("16");
        assertThat(sample.get(1).get("num_gpu_blocks").asText()).isEqualTo("2000");
        assertThat(sample.get(2).asDouble()).isEqualTo(1.0);
      }
      for (JsonNode sample : families.get("vllm:prefix_cache_hits").get("samples")) {
        // per rank: the second of two identical 100-token prompts finds 6 blocks of 16 cached
        assertThat(sample.get(0).asText()).isEqualTo("vllm:prefix_cache_hits_total");
        assertThat(sample.get(2).asDouble()).isEqualTo(96.0);
      }
      for (JsonNode sample : families.get("vllm:prefix_cache_queries").get("samples")) {
        assertThat(sample.get(2).asDouble()).isEqualTo(200.0);
      }
      long ttftCounts = 0;
      for (JsonNode sample : families.get("vllm:time_to_first_token_seconds").get("samples")) {
        if (sample.get(0).asText().endsWith("_count")) {
          ttftCounts += sample.get(2).asLong();
        }
      }
      assertThat(ttftCounts).isEqualTo(4);
    }
  }

  @Test
  void kvEventsReachAVllmStyleSubscriberInTheMapEncodingWithReplayFromAStartSeqAndTheEndMarker() throws Exception {
    kvEventsRoundTrip(EngineConfig.KvEventEncoding.MAP, EngineConfig.ReplayFormat.TOPIC);
  }

  @Test
  void kvEventsInTheArrayEncodingAndLegacyReplayOfEarlierVllmReleases() throws Exception {
    kvEventsRoundTrip(EngineConfig.KvEventEncoding.ARRAY, EngineConfig.ReplayFormat.LEGACY);
  }

  private void kvEventsRoundTrip(EngineConfig.KvEventEncoding encoding, EngineConfig.ReplayFormat replay)
      throws Exception {
    // 300 blocks: the third distinct 1,600-token prompt must evict
    try (SimEngineServer server = start(EngineConfig.loopback(MODEL, 300, 16, 50).withEncoding(encoding, replay),
        new TokenIdsOnlyTokenizer(128_256));
        PythonProgram subscriber = PythonProgram.start("kv_events_subscriber.py",
            "tcp://127.0.0.1:" + server.kvEventsPort(), "tcp://127.0.0.1:" + server.kvReplayPort(), "kv-events",
            replay.name().toLowerCase(java.util.Locale.ROOT), "2")) {
      subscriber.awaitStderr("READY", 30);
      List<int[]> prompts = new ArrayList<>();
      for (int p = 0; p < 3; p++) {
        int[] prompt = IntStream.range(p * 10_000, p * 10_000 + 1_600).toArray();
        prompts.add(prompt);
        HttpResponse<String> answer = post(server, "/v1/completions", "{\"prompt\": " + ids(p * 10_000, 1_600)
            + ", \"max_tokens\": 4, \"ignore_eos\": true}");
        assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
      }
      subscriber.send("DONE");
      PythonProgram.Result result = subscriber.await(60);
      assertThat(result.exitCode()).as(result.stderr()).isZero();
      JsonNode out = JSON.readTree(result.stdout());
      assertThat(out.get("bad")).as(out.get("bad").toString()).isEmpty();

      JsonNode batches = out.get("batches");
      List<Long> seqs = new ArrayList<>();
      batches.forEach(b -> seqs.add(b.get(0).asLong()));
      assertThat(seqs).as("every batch from seq 0 on, without a gap").isEqualTo(
          IntStream.range(0, seqs.size()).mapToObj(Long::valueOf).toList());
      JsonNode replays = out.get("replays");
      JsonNode fromMiddle = replays.get(replays.size() - 1);
      assertThat(fromMiddle.get("start").asInt()).isEqualTo(2);
      assertThat(fromMiddle.get("seqs").get(0).asInt()).isEqualTo(2);
      assertThat(fromMiddle.get("seqs").size()).isEqualTo(seqs.size() - 2);

      boolean maps = encoding == EngineConfig.KvEventEncoding.MAP;
      Set<BigInteger> stored = new HashSet<>();
      List<BigInteger> removed = new ArrayList<>();
      List<Integer> storedTokens = new ArrayList<>();
      boolean aboveSigned = false;
      JsonNode firstEvent = batches.get(0).get(1).get(1).get(0);
      assertThat(type(firstEvent, maps)).as("a new engine's first batch").isEqualTo("AllBlocksCleared");
      for (JsonNode entry : batches) {
        JsonNode batch = entry.get(1);
        assertThat(batch.isArray() && batch.size() == 3).as("[ts, events, data_parallel_rank]").isTrue();
        assertThat(batch.get(0).isDouble()).isTrue();
        assertThat(batch.get(2).asInt()).isZero();
        for (JsonNode event : batch.get(1)) {
          String type = type(event, maps);
          if (type.equals("BlockStored")) {
            JsonNode hashes = field(event, maps, "block_hashes", 1);
            JsonNode tokens = field(event, maps, "token_ids", 3);
            assertThat(field(event, maps, "block_size", 4).asInt()).isEqualTo(16);
            assertThat(tokens.size()).isEqualTo(16 * hashes.size());
            assertThat(field(event, maps, "lora_id", 5).isNull()).isTrue();
            assertThat(field(event, maps, "medium", 6).asText()).isEqualTo("GPU");
            assertThat(field(event, maps, "lora_name", 7).isNull()).isTrue();
            assertThat(field(event, maps, "extra_keys", 8).size()).isEqualTo(hashes.size());
            assertThat(field(event, maps, "group_idx", 9).asInt()).isZero();
            assertThat(field(event, maps, "kv_cache_spec_kind", 10).asText()).isEqualTo("full_attention");
            JsonNode parent = field(event, maps, "parent_block_hash", 2);
            if (!parent.isNull()) {
              assertThat(stored).as("a parent is a block stored before").contains(parent.bigIntegerValue());
            }
            for (JsonNode hash : hashes) {
              stored.add(hash.bigIntegerValue());
              aboveSigned |= hash.bigIntegerValue().compareTo(BigInteger.valueOf(Long.MAX_VALUE)) > 0;
            }
            tokens.forEach(t -> storedTokens.add(t.asInt()));
          } else if (type.equals("BlockRemoved")) {
            JsonNode hashes = field(event, maps, "block_hashes", 1);
            assertThat(hashes.size()).isEqualTo(1);
            assertThat(field(event, maps, "medium", 2).asText()).isEqualTo("GPU");
            removed.add(hashes.get(0).bigIntegerValue());
          }
        }
      }
      assertThat(aboveSigned).as("block hashes above 2^63 - 1, as unsigned 64-bit integers").isTrue();
      assertThat(removed).isNotEmpty();
      assertThat(stored).containsAll(removed);
      // the first prompt's blocks are stored with its own tokens, in order
      assertThat(storedTokens.subList(0, 1_600)).isEqualTo(IntStream.of(prompts.get(0)).boxed().toList());
    }
  }

  private static String type(JsonNode event, boolean maps) {
    return maps ? event.get("type").asText() : event.get(0).asText();
  }

  private static JsonNode field(JsonNode event, boolean maps, String name, int position) {
    JsonNode value = maps ? event.get(name) : event.get(position);
    assertThat(value).as(name + " in " + event).isNotNull();
    return value;
  }

  @Test
  void aClientThatDisconnectsMidStreamAbortsItsRequestAndItsBlocksAreFreed() throws Exception {
    try (SimEngineServer server = start(2_000, 1)) {
      String body = "{\"prompt\": " + ids(0, 500) + ", \"max_tokens\": 20000, \"ignore_eos\": true, "
          + "\"stream\": true}";
      try (Socket socket = new Socket("127.0.0.1", server.httpPort())) {
        OutputStream out = socket.getOutputStream();
        out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
            .getBytes(StandardCharsets.UTF_8));
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        String line;
        int events = 0;
        while (events < 3 && (line = in.readLine()) != null) {
          if (line.startsWith("data: {")) {
            events++;
          }
        }
        assertThat(events).isEqualTo(3);
        assertThat(value(metrics(server), "vllm:num_requests_running", "0")).isEqualTo(1);
        assertThat(value(metrics(server), "vllm:kv_cache_usage_perc", "0")).isPositive();
      }
      await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> {
        String metrics = metrics(server);
        assertThat(value(metrics, "vllm:num_requests_running", "0")).isZero();
        assertThat(value(metrics, "vllm:kv_cache_usage_perc", "0")).isZero();
        assertThat(metrics).containsPattern(
            "vllm:request_success_total\\{[^}]*finished_reason=\"abort\"[^}]*\\} 1\\.0");
      });
      // the aborted request's computed prompt blocks stay cached: the same prompt hits them
      HttpResponse<String> again = post(server, "/v1/completions", "{\"prompt\": " + ids(0, 500)
          + ", \"max_tokens\": 2}");
      assertThat(JSON.readTree(again.body()).at("/usage/prompt_tokens_details/cached_tokens").asInt())
          .isEqualTo(496);
    }
  }

  @Test
  void aClientThatDisconnectsBeforeANonStreamingAnswerAbortsItsRequest() throws Exception {
    try (SimEngineServer server = start(2_000, 1)) {
      String body = "{\"prompt\": " + ids(0, 100) + ", \"max_tokens\": 20000, \"ignore_eos\": true}";
      try (Socket socket = new Socket("127.0.0.1", server.httpPort())) {
        socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
        await().atMost(Duration.ofSeconds(10)).until(() ->
            value(metrics(server), "vllm:num_requests_running", "0") == 1);
      }
      await().atMost(Duration.ofSeconds(15)).untilAsserted(() ->
          assertThat(value(metrics(server), "vllm:num_requests_running", "0")).isZero());
    }
  }

  @Test
  void badRequestsAnswerVllmErrorBodiesAndStatusesAndChangeNothing() throws Exception {
    try (SimEngineServer server = start(2_000, 50)) {
      record Case(String path, String contentType, String body, int status, String type, String param) {}
      List<Case> cases = List.of(
          new Case("/v1/completions", "text/plain", "{}", 400, "Bad Request", null),
          new Case("/v1/completions", "application/json", "{not json", 400, "Bad Request", "body"),
          new Case("/v1/completions", "application/json", "{\"prompt\": [1, 2], \"max_tokens\": \"many\"}", 400,
              "Bad Request", "body.max_tokens"),
          new Case("/v1/completions", "application/json", "{\"prompt\": [1, -2]}", 400, "Bad Request",
              "body.prompt.1"),
          new Case("/v1/completions", "application/json", "{\"prompt\": [1, 2], \"stream_options\": "
              + "{\"include_usage\": true}}", 400, "BadRequestError", "stream_options"),
          new Case("/v1/completions", "application/json", "{\"prompt\": [1, 2], \"min_tokens\": 9, "
              + "\"max_tokens\": 3}", 400, "BadRequestError", null),
          new Case("/v1/completions", "application/json", "{\"model\": \"other\", \"prompt\": [1, 2]}", 404,
              "NotFoundError", "model"),
          new Case("/v1/completions", "application/json", "{\"prompt\": [1, 2], \"logprobs\": 2}", 400,
              "BadRequestError", "logprobs"),
          new Case("/v1/nothing", "application/json", "{}", 404, "Not Found", null));
      for (Case c : cases) {
        HttpResponse<String> answer = HTTP.send(HttpRequest.newBuilder(URI.create(base(server) + c.path()))
            .header("Content-Type", c.contentType()).POST(HttpRequest.BodyPublishers.ofString(c.body())).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(answer.statusCode()).as(c + " -> " + answer.body()).isEqualTo(c.status());
        JsonNode error = JSON.readTree(answer.body()).get("error");
        assertThat(error.get("type").asText()).as(c.toString()).isEqualTo(c.type());
        assertThat(error.get("code").asInt()).isEqualTo(c.status());
        assertThat(error.get("message").asText()).isNotBlank();
        assertThat(error.get("param").isNull() ? null : error.get("param").asText()).as(c.toString())
            .isEqualTo(c.param());
      }
      HttpResponse<String> wrongMethod = HTTP.send(HttpRequest.newBuilder(URI.create(base(server)
          + "/v1/completions")).GET().build(), HttpResponse.BodyHandlers.ofString());
      assertThat(wrongMethod.statusCode()).isEqualTo(405);
      String metrics = metrics(server);
      assertThat(value(metrics, "vllm:prefix_cache_queries_total", "0")).isZero();
      assertThat(value(metrics, "vllm:generation_tokens_total", "0")).isZero();
    }
  }
}
