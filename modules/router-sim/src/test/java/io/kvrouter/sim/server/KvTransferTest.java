package io.kvrouter.sim.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * vLLM's two-step prefill/decode protocol on two simulated engines: the prefill engine answers one token and the
 * NIXL connector's {@code kv_transfer_params}; the decode engine given them pulls the blocks (cached tokens in its
 * usage: their prefill skipped) and refuses with 400 a transfer it cannot resolve (pulled already, an unknown engine,
 * another prompt's blocks).
 */
class KvTransferTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private static final String MODEL = "org/llama-8b";

  private static SimEngineServer start() {
    return SimEngineServer.start(EngineConfig.loopback(MODEL, 2_000, 16, 50), new TokenIdsOnlyTokenizer(128_256));
  }

  private static HttpResponse<String> post(SimEngineServer server, String body) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.httpPort() + "/v1/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
        .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String prompt(int from, int count) {
    return IntStream.range(from, from + count).mapToObj(Integer::toString)
        .reduce((a, b) -> a + "," + b).map(s -> "[" + s + "]").orElseThrow();
  }

  private static String prefillBody(String prompt) {
    return "{\"model\":\"" + MODEL + "\",\"prompt\":" + prompt + ",\"max_tokens\":1,\"stream\":false,"
        + "\"kv_transfer_params\":{\"do_remote_decode\":true,\"do_remote_prefill\":false,\"remote_engine_id\":null,"
        + "\"remote_block_ids\":null,\"remote_host\":null,\"remote_port\":null}}";
  }

  private static String decodeBody(String prompt, JsonNode params) {
    return "{\"model\":\"" + MODEL + "\",\"prompt\":" + prompt + ",\"max_tokens\":4,\"ignore_eos\":true,"
        + "\"kv_transfer_params\":" + params + "}";
  }

  @Test
  void aDecodeEngineTakesThePrefillEnginesBlocksOnce() throws Exception {
    try (SimEngineServer prefill = start(); SimEngineServer decode = start()) {
      String prompt = prompt(1, 100); // 6 full blocks of 16
      HttpResponse<String> first = post(prefill, prefillBody(prompt));
      assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
      JsonNode answer = JSON.readTree(first.body());
      assertThat(answer.path("usage").path("completion_tokens").asInt()).isEqualTo(1);
      JsonNode params = answer.path("kv_transfer_params");
      assertThat(params.path("do_remote_prefill").asBoolean()).isTrue();
      assertThat(params.path("do_remote_decode").asBoolean(true)).isFalse();
      assertThat(params.path("remote_block_ids").size()).isEqualTo(6);
      assertThat(params.path("remote_engine_id").asText()).isEqualTo(prefill.transfers().engineId());
      assertThat(params.path("remote_port").asInt()).isEqualTo(prefill.httpPort());
      assertThat(params.path("remote_host").asText()).isEqualTo("127.0.0.1");
      assertThat(params.path("tp_size").asInt()).isEqualTo(1);
      assertThat(params.path("remote_request_id").asText()).isNotBlank();
      assertThat(prefill.transfers().heldCount()).isEqualTo(1);

      HttpResponse<String> second = post(decode, decodeBody(prompt, params));
      assertThat(second.statusCode()).as(second.body()).isEqualTo(200);
      JsonNode decoded = JSON.readTree(second.body());
      assertThat(decoded.path("usage").path("completion_tokens").asInt()).isEqualTo(4);
      // the 96 transferred tokens were not prefilled on the decode engine (its cache was empty)
      assertThat(decoded.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt()).isEqualTo(96);
      assertThat(prefill.transfers().heldCount()).isZero();

      HttpResponse<String> again = post(decode, decodeBody(prompt, params));
      assertThat(again.statusCode()).as("pulled already").isEqualTo(400);
      assertThat(again.body()).contains("KV transfer could not be resolved");
    }
  }

  @Test
  void aTransferTheDecodeEngineCannotResolveIs400() throws Exception {
    try (SimEngineServer prefill = start(); SimEngineServer decode = start()) {
      String prompt = prompt(1, 64);
      JsonNode params = JSON.readTree(post(prefill, prefillBody(prompt)).body()).path("kv_transfer_params");

      ObjectNode otherEngine = params.deepCopy();
      otherEngine.put("remote_engine_id", "someone-else");
      assertThat(post(decode, decodeBody(prompt, otherEngine)).statusCode()).isEqualTo(400);

      ObjectNode nowhere = params.deepCopy();
      nowhere.put("remote_port", 1);
      assertThat(post(decode, decodeBody(prompt, nowhere)).statusCode()).isEqualTo(400);

      ObjectNode missing = params.deepCopy();
      missing.remove("remote_host");
      assertThat(post(decode, decodeBody(prompt, missing)).statusCode()).isEqualTo(400);

      // another prompt than the one prefilled: pulled, but refused
      HttpResponse<String> other = post(decode, decodeBody(prompt(500, 64), params));
      assertThat(other.statusCode()).isEqualTo(400);
      assertThat(other.body()).contains("not this prompt's");
    }
  }
}
