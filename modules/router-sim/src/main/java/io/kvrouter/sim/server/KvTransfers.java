package io.kvrouter.sim.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * vLLM's prefill/decode KV transfer as the simulated engine emulates it (the NIXL connector's protocol, without the
 * bytes). A prefill engine asked for a remote decode ({@code kv_transfer_params.do_remote_decode}) answers its one
 * token with {@code kv_transfer_params} = {do_remote_prefill: true, do_remote_decode: false, remote_block_ids (the
 * prompt's full blocks), remote_engine_id, remote_request_id, remote_host, remote_port (this engine's HTTP port,
 * standing for NIXL's side channel), tp_size: 1} and holds the blocks for the decode engine; a decode engine given
 * those params pulls them ({@code POST /kv_transfer/pull} on the prefill engine, which then forgets them), so it skips
 * their prefill (its TTFT), or answers 400 when the transfer cannot be resolved (no such engine, request or blocks,
 * or blocks of another prompt). A prefill engine drops blocks no decode pulled after {@link #HOLD} (vLLM's
 * {@code VLLM_NIXL_ABORT_REQUEST_TIMEOUT}, 480 s by default).
 */
public final class KvTransfers {
  static final Duration HOLD = Duration.ofSeconds(480);
  static final String PULL_PATH = "/kv_transfer/pull";

  /** What a prefill engine holds for a decode engine: the blocks' hashes and the prompt tokens they cover. */
  record Held(long[] blockHashes, int tokens, long expiresAtNanos) {}

  /** What a decode engine received: the blocks' hashes and the prompt tokens they cover. */
  record Received(long[] blockHashes, int tokens) {}

  private final String engineId = "sim-" + UUID.randomUUID();
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  String engineId() {
    return engineId;
  }

  /** Blocks held for a decode engine that has not pulled them (yet). */
  public int heldCount() {
    expire();
    return held.size();
  }

  /** A prefill's answer params for {@code requestId}, its blocks held until pulled or expired. */
  ObjectNode offer(String requestId, long[] promptBlockHashes, int blockSize, String host, int port) {
    expire();
    held.put(requestId, new Held(promptBlockHashes, promptBlockHashes.length * blockSize,
        System.nanoTime() + HOLD.toNanos()));
    ObjectNode params = JsonSupport.MAPPER.createObjectNode();
    params.put("do_remote_prefill", true);
    params.put("do_remote_decode", false);
    ArrayNode ids = params.putArray("remote_block_ids");
    for (long hash : promptBlockHashes) {
      ids.add(hash);
    }
    params.put("remote_engine_id", engineId);
    params.put("remote_request_id", requestId);
    params.put("remote_host", host);
    params.put("remote_port", port);
    params.put("tp_size", 1);
    return params;
  }

  /** The prefill side of a pull: the held blocks, forgotten now, or null when none match. */
  Received take(JsonNode pull) {
    expire();
    String requestId = pull.path("remote_request_id").asText("");
    Held h = held.get(requestId);
    if (h == null || !pull.path("remote_engine_id").asText("").equals(engineId)
        || !Arrays.equals(h.blockHashes(), blockIds(pull.path("remote_block_ids")))) {
      return null;
    }
    held.remove(requestId, h);
    return new Received(h.blockHashes(), h.tokens());
  }

  /** The decode side: pulls the blocks {@code params} name from their prefill engine; fails with a 400 to answer. */
  CompletionStage<Received> pull(ObjectNode params) {
    String host = params.path("remote_host").asText("");
    int port = params.path("remote_port").asInt(-1);
    if (host.isEmpty() || port <= 0 || port > 65_535 || !params.path("remote_block_ids").isArray()
        || params.path("remote_request_id").asText("").isEmpty()) {
      return CompletableFuture.failedFuture(unresolved("kv_transfer_params need remote_host, remote_port, "
          + "remote_request_id and remote_block_ids"));
    }
    ObjectNode pull = JsonSupport.MAPPER.createObjectNode();
    pull.put("remote_engine_id", params.path("remote_engine_id").asText(""));
    pull.put("remote_request_id", params.path("remote_request_id").asText());
    pull.set("remote_block_ids", params.get("remote_block_ids"));
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(new URI("http", null, host, port, PULL_PATH, null, null))
          .timeout(Duration.ofSeconds(10)).header("content-type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(pull.toString())).build();
    } catch (java.net.URISyntaxException | IllegalArgumentException e) {
      return CompletableFuture.failedFuture(unresolved("remote_host '" + host + "' is not a host"));
    }
    return client.sendAsync(request, HttpResponse.BodyHandlers.ofString()).handle((response, failure) -> {
      if (failure != null) {
        throw unresolved("the prefill engine at " + host + ":" + port + " could not be reached");
      }
      if (response.statusCode() != 200) {
        throw unresolved("the prefill engine at " + host + ":" + port + " holds no such blocks (HTTP "
            + response.statusCode() + ")");
      }
      try {
        JsonNode answer = JsonSupport.MAPPER.readTree(response.body());
        return new Received(blockIds(params.get("remote_block_ids")), answer.path("tokens").asInt());
      } catch (java.io.IOException e) {
        throw unresolved("the prefill engine answered something other than JSON");
      }
    });
  }

  static ApiException unresolved(String why) {
    return ApiException.validation("KV transfer could not be resolved: " + why + ".", "kv_transfer_params", null);
  }

  private static long[] blockIds(JsonNode ids) {
    if (ids == null || !ids.isArray()) {
      return null;
    }
    long[] out = new long[ids.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = ids.get(i).asLong();
    }
    return out;
  }

  private void expire() {
    long now = System.nanoTime();
    held.values().removeIf(h -> now - h.expiresAtNanos() > 0);
  }
}
