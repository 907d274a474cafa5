package io.kvrouter.sim.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * vLLM's OpenAI-compatible HTTP surface over the engine (vllm/entrypoints/openai/*, 0.33.0): POST /v1/completions and
 * /v1/chat/completions (JSON, or SSE with {@code stream: true}: {@code data: {...}} events, then {@code data: [DONE]}),
 * GET /v1/models, GET /health, GET /metrics, POST /reset_prefix_cache. Errors are vLLM's ErrorResponse with its
 * statuses. A response streams as the engine produces it: pulled by the client's reads (a slow reader gets merged
 * deltas, see {@link ResponseCollector}); a client that goes away cancels the response, which aborts its requests in
 * the engine, freeing their blocks, as vLLM does. Non-streaming answers are one chunked body, the JSON when done,
 * preceded by a space a second while waiting (see {@link #nextJson}), so a disconnect before then aborts too.
 */
final class EngineHttpServer {
  private static final ContentType SSE = MediaTypes.TEXT_EVENT_STREAM.toContentType();
  private static final ContentType PROMETHEUS = ContentTypes.parse("text/plain; version=0.0.4; charset=utf-8");
  private static final ByteString DONE = ByteString.fromString("data: [DONE]\n\n");
  private static final long MAX_BODY_BYTES = 32L << 20;

  private final SimEngineServer server;
  private final Materializer materializer;

  EngineHttpServer(SimEngineServer server, ActorSystem<?> system) {
    this.server = server;
    this.materializer = Materializer.createMaterializer(system);
  }

  CompletionStage<HttpResponse> handle(HttpRequest request) {
    String path = request.getUri().path();
    boolean get = request.method().equals(HttpMethods.GET);
    boolean post = request.method().equals(HttpMethods.POST);
    try {
      switch (path) {
        case "/health":
          return get ? discard(request, HttpResponse.create()) : methodNotAllowed(request);
        case "/metrics":
          return get ? discard(request, HttpResponse.create()
              .withEntity(HttpEntities.create(PROMETHEUS, server.metrics().scrape()))) : methodNotAllowed(request);
        case "/v1/models":
          return get ? discard(request, json(200, server.models())) : methodNotAllowed(request);
        case "/reset_prefix_cache":
          if (!post) {
            return methodNotAllowed(request);
          }
          request.discardEntityBytes(materializer);
          return server.resetPrefixCache().thenApply(ok -> ok ? HttpResponse.create()
              : error(new ApiException(500, "InternalServerError",
                  "Failed to reset prefix cache: requests are running", null)));
        case KvTransfers.PULL_PATH:
          if (!post) {
            return methodNotAllowed(request);
          }
          return request.entity().toStrict(10_000, MAX_BODY_BYTES, materializer).thenApply(strict -> {
            KvTransfers.Received taken;
            try {
              taken = server.transfers().take(JsonSupport.MAPPER.readTree(strict.getData().toArray()));
            } catch (java.io.IOException e) {
              taken = null;
            }
            if (taken == null) {
              return error(new ApiException(404, "NotFoundError", "no KV blocks held for that request", null));
            }
            ObjectNode answer = JsonSupport.MAPPER.createObjectNode();
            answer.put("tokens", taken.tokens());
            return json(200, answer);
          });
        case "/v1/completions":
        case "/v1/chat/completions":
          if (!post) {
            return methodNotAllowed(request);
          }
          return generate(request, path.equals("/v1/chat/completions"));
        default:
          return discard(request, error(new ApiException(404, "Not Found", "Not Found", null)));
      }
    } catch (ApiException e) {
      return discard(request, error(e));
    }
  }

  private CompletionStage<HttpResponse> generate(HttpRequest request, boolean chat) {
    String contentType = request.entity().getContentType().mediaType().toString();
    if (!contentType.equalsIgnoreCase("application/json")) {
      return discard(request, error(new ApiException(400, "Bad Request",
          "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed", null)));
    }
    Integer pinnedRank = request.getHeader("X-data-parallel-rank")
        .map(h -> {
          try {
            return Integer.parseInt(h.value().trim());
          } catch (NumberFormatException e) {
            return null; // vLLM ignores a rank header that is not an integer
          }
        }).orElse(null);
    return request.entity().toStrict(60_000, MAX_BODY_BYTES, materializer)
        .thenApply(strict -> {
          JsonNode body;
          try {
            body = JsonSupport.MAPPER.readTree(strict.getData().toArray());
          } catch (java.io.IOException e) {
            throw ApiException.schema(null, "json_invalid", "JSON decode error", null);
          }
          GenerationRequest parsed = GenerationRequest.parse(body, chat, server.tokenizer());
          if (parsed.model() != null && !parsed.model().equals(server.config().model())) {
            throw new ApiException(404, "NotFoundError", "The model `" + parsed.model() + "` does not exist. "
                + "Valid aliases: " + server.config().model() + ".", "model");
          }
          if (parsed.decodeOfRemotePrefill()) {
            // the second step of vLLM's P/D protocol: pull the prefill engine's blocks, then decode without them
            return server.transfers().pull(parsed.kvTransferParams())
                .thenApply(received -> respond(parsed, server.submit(parsed, pinnedRank, received)));
          }
          return java.util.concurrent.CompletableFuture.completedFuture(
              respond(parsed, server.submit(parsed, pinnedRank, null)));
        })
        .thenCompose(response -> response)
        .exceptionally(EngineHttpServer::failure);
  }

  private static HttpResponse failure(Throwable t) {
    Throwable cause = t instanceof java.util.concurrent.CompletionException && t.getCause() != null ? t.getCause() : t;
    if (cause instanceof ApiException api) {
      return error(api);
    }
    if (cause instanceof EntityStreamSizeException) {
      return error(new ApiException(413, "Request Entity Too Large", "Request body exceeds " + MAX_BODY_BYTES
          + " bytes", null));
    }
    return error(new ApiException(500, "InternalServerError", String.valueOf(cause.getMessage()), null));
  }

  private HttpResponse respond(GenerationRequest request, SimEngineServer.Submitted submitted) {
    String id = (request.chat() ? "chatcmpl-" : "cmpl-")
        + (request.requestId() != null ? request.requestId() : UUID.randomUUID().toString().replace("-", ""));
    long created = System.currentTimeMillis() / 1000;
    Source<ByteString, NotUsed> body = request.stream()
        ? Source.unfoldAsync(new StreamState(), state -> nextEvents(state, request, submitted, id, created))
        : Source.unfoldAsync(Boolean.FALSE, sent -> nextJson(sent, request, submitted, id, created));
    Source<ByteString, NotUsed> watched = body.watchTermination((mat, termination) -> {
      termination.whenComplete((done, failure) -> {
        if (!submitted.collector().finished()) {
          submitted.abort(); // the client went away before the end: free the engine's blocks
        }
      });
      return mat;
    });
    return HttpResponse.create().withEntity(HttpEntities.createChunked(
        request.stream() ? SSE : ContentTypes.APPLICATION_JSON, watched));
  }

  private static final ByteString WHITESPACE = ByteString.fromString(" ");

  /**
   * The non-streaming answer: the JSON once every choice is done. Until then a space every second (JSON allows
   * whitespace before a value): writing is how a server learns that the client has gone, and a request whose client
   * left is aborted, as vLLM's with_cancellation does.
   */
  private CompletionStage<Optional<Pair<Boolean, ByteString>>> nextJson(boolean sent, GenerationRequest request,
      SimEngineServer.Submitted submitted, String id, long created) {
    if (sent) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    CompletableFuture<Void> done = submitted.collector().done().toCompletableFuture();
    CompletableFuture<Object> tick = new CompletableFuture<>();
    CompletableFuture.delayedExecutor(1, java.util.concurrent.TimeUnit.SECONDS).execute(() -> tick.complete(null));
    return CompletableFuture.anyOf(done, tick).thenCompose(ignored -> {
      if (!done.isDone()) {
        return CompletableFuture.completedFuture(Optional.of(Pair.create(Boolean.FALSE, WHITESPACE)));
      }
      return submitted.collector().next().thenApply(deltas -> Optional.of(Pair.create(Boolean.TRUE,
          ByteString.fromArray(json(fullResponse(request, submitted, deltas, id, created))))));
    });
  }

  /** Where an SSE response is. */
  private static final class StreamState {
    boolean[] started;
    boolean usageSent;
    boolean doneSent;
  }

  private CompletionStage<Optional<Pair<StreamState, ByteString>>> nextEvents(StreamState state,
      GenerationRequest request, SimEngineServer.Submitted submitted, String id, long created) {
    ResponseCollector collector = submitted.collector();
    if (state.doneSent) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    if (state.started == null) {
      state.started = new boolean[collector.choices()];
    }
    return collector.next().thenApply(deltas -> {
      StringBuilder events = new StringBuilder();
      if (deltas.isEmpty()) {
        if (request.includeUsage() && !state.usageSent) {
          ObjectNode usage = chunk(request, id, created);
          usage.putArray("choices");
          usage.set("usage", usage(request, submitted, null));
          sse(events, usage);
          state.usageSent = true;
        }
        events.append("data: [DONE]\n\n");
        state.doneSent = true;
        return Optional.of(Pair.create(state, ByteString.fromString(events.toString())));
      }
      for (ResponseCollector.ChoiceDelta delta : deltas) {
        if ("abort".equals(delta.finishReason())) {
          continue;
        }
        if (request.chat() && !state.started[delta.index()]) {
          // vLLM's first chunk per choice: the role, with empty content
          ObjectNode role = chunk(request, id, created);
          ObjectNode choice = role.putArray("choices").addObject();
          choice.put("index", delta.index());
          ObjectNode d = choice.putObject("delta");
          d.put("role", "assistant");
          d.put("content", "");
          choice.putNull("logprobs");
          choice.putNull("finish_reason");
          if (request.returnTokenIds()) {
            role.set("prompt_token_ids", ids(request.prompts().get(delta.index() / request.n())));
          }
          if (request.continuousUsage()) {
            role.set("usage", usage(request, submitted, delta.index()));
          }
          sse(events, role);
        }
        boolean firstForChoice = !state.started[delta.index()];
        state.started[delta.index()] = true;
        ObjectNode chunk = chunk(request, id, created);
        ObjectNode choice = chunk.putArray("choices").addObject();
        choice.put("index", delta.index());
        String text = server.tokenizer().decode(delta.tokenIds());
        if (request.chat()) {
          ObjectNode d = choice.putObject("delta");
          if (!text.isEmpty() || delta.finishReason() == null) {
            d.put("content", text);
          }
        } else {
          choice.put("text", text);
        }
        choice.putNull("logprobs");
        if (delta.finishReason() == null) {
          choice.putNull("finish_reason");
          if (!request.chat()) {
            choice.putNull("stop_reason");
          }
        } else {
          choice.put("finish_reason", delta.finishReason());
          choice.putNull("stop_reason");
        }
        if (!request.chat() && request.returnTokenIds() && firstForChoice) {
          choice.set("prompt_token_ids", ids(request.prompts().get(delta.index() / request.n())));
        }
        if (request.returnTokenIds()) {
          choice.set("token_ids", ids(delta.tokenIds()));
        } else if (!request.chat()) {
          choice.putNull("token_ids");
        }
        if (request.continuousUsage()) {
          chunk.set("usage", usage(request, submitted, delta.index()));
        }
        sse(events, chunk);
      }
      return Optional.of(Pair.create(state, ByteString.fromString(events.toString())));
    });
  }

  private static ObjectNode chunk(GenerationRequest request, String id, long created) {
    ObjectNode chunk = JsonSupport.MAPPER.createObjectNode();
    chunk.put("id", id);
    chunk.put("object", request.chat() ? "chat.completion.chunk" : "text_completion");
    chunk.put("created", created);
    chunk.put("model", request.model() == null ? "" : request.model());
    return chunk;
  }

  private void sse(StringBuilder events, ObjectNode chunk) {
    if (chunk.get("model").asText().isEmpty()) {
      chunk.put("model", server.config().model());
    }
    events.append("data: ").append(new String(json(chunk), StandardCharsets.UTF_8)).append("\n\n");
  }

  /** usage: the whole request's, or one choice's so far (continuous_usage_stats). */
  private static ObjectNode usage(GenerationRequest request, SimEngineServer.Submitted submitted, Integer choice) {
    ResponseCollector collector = submitted.collector();
    ObjectNode usage = JsonSupport.MAPPER.createObjectNode();
    long prompt = choice == null ? collector.totalPromptTokens(request.n()) : collector.promptTokens(choice);
    long completion = collector.totalCompletionTokens();
    usage.put("prompt_tokens", prompt);
    usage.put("total_tokens", prompt + completion);
    usage.put("completion_tokens", completion);
    if (choice == null) {
      // vLLM with --enable-prompt-tokens-details: the prompt tokens its prefix cache served
      usage.putObject("prompt_tokens_details").put("cached_tokens", collector.totalCachedTokens(request.n()));
    }
    return usage;
  }

  private ObjectNode fullResponse(GenerationRequest request, SimEngineServer.Submitted submitted,
      List<ResponseCollector.ChoiceDelta> deltas, String id, long created) {
    ResponseCollector collector = submitted.collector();
    List<int[]> tokens = new ArrayList<>();
    for (int i = 0; i < collector.choices(); i++) {
      tokens.add(new int[0]);
    }
    for (ResponseCollector.ChoiceDelta delta : deltas) {
      tokens.set(delta.index(), delta.tokenIds());
    }
    ObjectNode response = JsonSupport.MAPPER.createObjectNode();
    response.put("id", id);
    response.put("object", request.chat() ? "chat.completion" : "text_completion");
    response.put("created", created);
    response.put("model", request.model() == null ? server.config().model() : request.model());
    ArrayNode choices = response.putArray("choices");
    for (int i = 0; i < collector.choices(); i++) {
      ObjectNode choice = choices.addObject();
      choice.put("index", i);
      String text = server.tokenizer().decode(tokens.get(i));
      if (request.chat()) {
        ObjectNode message = choice.putObject("message");
        message.put("role", "assistant");
        message.put("content", text);
        message.putNull("refusal");
        message.putNull("annotations");
        message.putNull("audio");
        message.putNull("function_call");
        message.putNull("reasoning");
      } else {
        choice.put("text", text);
      }
      choice.putNull("logprobs");
      choice.put("finish_reason", collector.finishReason(i));
      choice.putNull("stop_reason");
      if (request.returnTokenIds()) {
        choice.set("token_ids", ids(tokens.get(i)));
        if (!request.chat()) {
          choice.set("prompt_token_ids", ids(request.prompts().get(i / request.n())));
        }
      } else {
        choice.putNull("token_ids");
      }
      if (!request.chat()) {
        choice.putNull("prompt_logprobs");
        if (!request.returnTokenIds()) {
          choice.putNull("prompt_token_ids");
        }
      }
    }
    response.putNull("service_tier");
    response.putNull("system_fingerprint");
    response.set("usage", usage(request, submitted, null));
    if (request.chat()) {
      response.putNull("prompt_logprobs");
      response.set("prompt_token_ids", request.returnTokenIds() ? ids(request.prompts().get(0)) : null);
    }
    if (request.prefillForRemoteDecode()) {
      RankEngine.Job job = submitted.jobs().get(0);
      var sim = job.request();
      int fullBlocks = sim.promptTokens() / sim.blockSize();
      response.set("kv_transfer_params", server.transfers().offer(sim.id(),
          java.util.Arrays.copyOf(sim.blockHashes(), fullBlocks), sim.blockSize(), server.config().host(),
          server.httpPort()));
    } else {
      response.putNull("kv_transfer_params");
    }
    return response;
  }

  private static ArrayNode ids(int[] ids) {
    ArrayNode array = JsonSupport.MAPPER.createArrayNode();
    for (int id : ids) {
      array.add(id);
    }
    return array;
  }

  private static byte[] json(JsonNode node) {
    try {
      return JsonSupport.MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static HttpResponse json(int status, JsonNode body) {
    return HttpResponse.create().withStatus(status)
        .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, json(body)));
  }

  static HttpResponse error(ApiException e) {
    return json(e.status(), JsonSupport.error(e));
  }

  private CompletionStage<HttpResponse> methodNotAllowed(HttpRequest request) {
    return discard(request, error(new ApiException(405, "Method Not Allowed", "Method Not Allowed", null)));
  }

  private CompletionStage<HttpResponse> discard(HttpRequest request, HttpResponse response) {
    request.discardEntityBytes(materializer);
    return CompletableFuture.completedFuture(response);
  }

}
