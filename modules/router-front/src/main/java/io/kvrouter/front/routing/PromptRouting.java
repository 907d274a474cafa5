package io.kvrouter.front.routing;

import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionRequests;
import io.kvrouter.front.FrontError;
import io.kvrouter.front.request.ClientRequest;
import io.kvrouter.front.request.Endpoint;
import io.kvrouter.tokenizer.ModelTokenizers;
import io.kvrouter.tokenizer.RoutingPrompt;
import io.kvrouter.tokenizer.RoutingPrompts;
import io.kvrouter.tokenizer.TemplateException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;

/**
 * A request's prompt as the router routes it: rendered and tokenized as the engine will see it (a model the models
 * file lists with a tokenizer), or in approximate mode (GIE-style text chunks: a model without a tokenizer, or a chat
 * the template cannot render here), then reduced by router-core's {@link SelectionRequests} to a validated
 * {@link SelectionRequest}. Tokenizing costs milliseconds for long prompts (router-tokenizer's results/tokenize.md),
 * so it runs on {@code tokenizerPool}, never on the caller's (HTTP dispatcher) thread; approximate mode costs
 * microseconds and runs inline.
 */
public final class PromptRouting {
  /** What routing one request produced. */
  public record Routed(SelectionRequest request, boolean approximate, String approximateReason, long tokenizeNanos) {}

  private final Supplier<ModelTokenizers> models;
  private final SelectionRequests requests;
  private final Executor tokenizerPool;

  /** {@code models} is looked up per request (the models file may be reloaded); null: approximate mode for all. */
  public PromptRouting(Supplier<ModelTokenizers> models, SelectionRequests requests, Executor tokenizerPool) {
    this.models = models;
    this.requests = requests;
    this.tokenizerPool = tokenizerPool;
  }

  /** The model's entry in the models file, or null (approximate mode). */
  public ModelTokenizers.Model model(String name) {
    ModelTokenizers registry = models.get();
    return registry == null ? null : registry.get(name);
  }

  /**
   * Routes {@code request} in {@code scope} under the booking id {@code requestId}: completes with the selection
   * request, or fails with a {@link io.kvrouter.front.FrontException} (a body the template rejects, an oversized
   * prompt, a full tokenizer queue).
   */
  public CompletionStage<Routed> route(ClientRequest request, BookingScope scope, String requestId) {
    ModelTokenizers.Model model = model(request.model());
    if (model == null || model.approximate()) {
      try {
        return CompletableFuture.completedFuture(routeNow(request, null, scope, requestId));
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    try {
      return CompletableFuture.supplyAsync(() -> {
        try {
          return routeNow(request, model, scope, requestId);
        } catch (IllegalStateException closed) {
          // the models file was reloaded and this tokenizer closed under the encode: the current entry's, once
          return routeNow(request, model(request.model()), scope, requestId);
        }
      }, tokenizerPool);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.failedFuture(new FrontError(503, FrontError.UNAVAILABLE, FrontError.TOKENIZER_BUSY,
          "every tokenizer thread is busy and the queue is full; retry shortly", null, 1).toException());
    }
  }

  /** Routes on the calling thread. */
  public Routed routeNow(ClientRequest request, ModelTokenizers.Model model, BookingScope scope, String requestId) {
    long start = System.nanoTime();
    RoutingPrompt prompt = prompt(request, model, scope.blockSize());
    long tokenized = System.nanoTime() - start;
    Map<String, Object> body = request.body();
    String salt = body.get("cache_salt") instanceof String s ? s : null;
    int[] tokens = prompt.tokenIds();
    long[] hashes = prompt.blockHashes();
    try {
      SelectionRequest selection = requests.toSelectionRequest(new SelectionRequests.Fields(request.model(),
          requestId, tokens, tokens == null ? 0 : tokens.length, hashes, hashes == null ? 0 : hashes.length,
          prompt.islTokens(), Math.min(expectedOutputTokens(body), requests.limits().maxOutputTokens()),
          request.loraName().isEmpty() ? null : request.loraName(), salt, null, null, List.of(), List.of(),
          request.priority(), null, null, null, request.strictPriority(), request.policyClass(),
          request.disaggregation()), true, scope.blockSize());
      selection = SelectionRequests.withSession(selection, request.session(), request.sessionMode());
      selection = SelectionRequests.withPlacement(selection, request.requiredTaints(), request.preferredTaints(),
          request.preferredTaintMultiplier());
      return new Routed(selection, prompt.approximate(), prompt.reason(), tokenized);
    } catch (RoutingException e) {
      throw FrontError.of(e.error(), 0).toException();
    }
  }

  private static RoutingPrompt prompt(ClientRequest request, ModelTokenizers.Model model, int blockSize) {
    try {
      return request.endpoint() == Endpoint.CHAT_COMPLETIONS
          ? RoutingPrompts.chat(model, request.body(), blockSize, null)
          : RoutingPrompts.completion(model, request.body(), blockSize, null);
    } catch (TemplateException e) {
      String code = e.kind() == TemplateException.Kind.REJECTED ? FrontError.TEMPLATE_REJECTED
          : FrontError.INVALID_BODY;
      throw FrontError.badRequest(code, e.getMessage()).toException();
    } catch (ClassCastException e) {
      // a body whose fields have the wrong JSON types for the template or the prompt
      throw FrontError.badRequest(FrontError.INVALID_BODY, "a field of the body has the wrong type: "
          + io.kvrouter.core.error.RoutingError.truncate(String.valueOf(e.getMessage()), 200)).toException();
    }
  }

  /** max_completion_tokens (chat) or max_tokens, when a non-negative integer; else 0 (unknown). */
  static int expectedOutputTokens(Map<String, Object> body) {
    for (String key : new String[] {"max_completion_tokens", "max_tokens"}) {
      Object value = body.get(key);
      if (value instanceof Integer n && n >= 0) {
        return n;
      }
      if (value instanceof Long n && n >= 0) {
        return (int) Math.min(n, Integer.MAX_VALUE);
      }
    }
    return 0;
  }
}
