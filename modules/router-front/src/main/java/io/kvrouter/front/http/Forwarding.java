package io.kvrouter.front.http;

import io.kvrouter.core.admission.SessionOutcome;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.front.FrontError;
import io.kvrouter.front.FrontException;
import io.kvrouter.front.request.ClientRequest;
import io.kvrouter.front.request.FrontHeaders;
import io.kvrouter.front.routing.BookingScope;
import io.kvrouter.front.routing.PromptRouting;
import io.kvrouter.front.routing.RequestBooking;
import io.kvrouter.front.routing.TwoStepProtocol;
import io.kvrouter.front.routing.LoraAdapters;
import io.kvrouter.core.selection.Disaggregation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * One client request through the front: route (tokenize, book), forward to the booked worker, and stream its answer
 * back. Before the first byte of the answer reaches the client, a worker that refuses, resets, times out or answers
 * 5xx/429 is released, counted (its breaker) and excluded, and the request is booked again, up to the configured
 * attempts. Once the first byte is out, a failure ends the stream (SSE: an OpenAI error event, then {@code [DONE]};
 * otherwise the connection is cut) and the booking is released. The answer streams with backpressure: a chunk is read
 * from the engine when the client has taken the previous one.
 */
final class Forwarding {
  /** A response produced but whose body the server never started (its client had gone): released after this. */
  private static final long BODY_START_GRACE_MS = 10_000;
  private static final ByteString DONE = ByteString.fromString("data: [DONE]\n\n");
  /**
   * Continuations of Pekko's stages run on the thread that completed them: a Java stage of a Scala future runs a
   * plain continuation ({@code whenComplete}) on the common pool, a thread hand-off per stage (docs/architecture.md,
   * "The JDK common pool on small hosts"). Each one here is a few cheap calls that never block.
   */
  private static final java.util.concurrent.Executor SAME_THREAD = Runnable::run;
  /** Writes the two-step protocol's bodies and reads the prefill's answer. */
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Why an attempt failed before its first byte. */
  private record AttemptFailure(String reason, String worker, FrontError error) {}

  private static final class Failed extends RuntimeException {
    final AttemptFailure failure;

    Failed(AttemptFailure failure) {
      super(failure.reason(), null, false, false);
      this.failure = failure;
    }
  }

  /** The first byte (or the engine's own client error) of an attempt, and the worker that sent it. */
  private record FirstBytes(HttpResponse response, ByteString first, Source<ByteString, NotUsed> rest,
      boolean passThrough, String worker) {}

  private final FrontContext ctx;
  private ClientRequest request;
  private final ByteString body;
  private final HttpRequest incoming;
  private final long arrivalNanos;
  private final String clientId;
  private RequestBooking booking;
  private AttemptFailure lastFailure;
  private long attemptStartNanos;
  private volatile long firstByteNanos;
  private final AtomicLong bytesOut = new AtomicLong();
  private final AtomicBoolean finished = new AtomicBoolean();
  private final AtomicBoolean bodyStarted = new AtomicBoolean();
  /** The {@link #guardBody} timer, cancelled when the server starts the body. */
  private volatile ScheduledFuture<?> bodyGuard;
  private volatile String outcome;
  private volatile String workerServed;
  private volatile String prefillServed;
  private volatile String bookingServed;

  Forwarding(FrontContext ctx, ClientRequest request, ByteString body, HttpRequest incoming, long arrivalNanos) {
    this.ctx = ctx;
    this.request = request;
    this.body = body;
    this.incoming = incoming;
    this.arrivalNanos = arrivalNanos;
    this.attemptStartNanos = arrivalNanos;
    this.clientId = request.clientRequestId() != null ? request.clientRequestId() : generatedId();
  }

  private static String generatedId() {
    return Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
  }

  /**
   * The booking id base: the client's id (or a generated one) and a random suffix, so two clients reusing one
   * x-request-id never share a booking (a Book under a live id would replay the other's booking).
   */
  private String idBase() {
    return "front-" + clientId + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
  }

  CompletionStage<HttpResponse> run() {
    // the front drives vLLM's two-step protocol: it books a prefill/decode pair where the model has both roles
    request = request.withDisaggregation(Disaggregation.AUTO);
    request = LoraAdapters.resolve(ctx.cluster(), request);
    BookingScope scope;
    try {
      scope = BookingScope.resolve(ctx.cluster(), request.model(), request.global());
    } catch (RoutingException e) {
      return done(error(FrontError.of(e.error(), ctx.settings().retryAfterSeconds())));
    }
    String base = idBase();
    return ctx.routing().route(request, scope, base + "/0").thenCompose(routed -> {
      ctx.metrics().tokenized(request.model(), routed.approximate(), routed.tokenizeNanos());
      booking = new RequestBooking(ctx.cluster(), scope, routed.request(), base, ctx.settings().bookTimeout(),
          ctx.settings().mutationTimeout(), ctx.settings().renewInterval(), ctx.timers(), ctx.breakers(),
          ctx.metrics());
      return attempt();
    }).exceptionally(failure -> error(failure)).thenApply(this::guardBody);
  }

  private CompletionStage<HttpResponse> done(HttpResponse response) {
    return CompletableFuture.completedFuture(guardBody(response));
  }

  // ---------------------------------------------------------------- attempts

  private CompletionStage<HttpResponse> attempt() {
    return booking.book().handle((booked, failure) -> {
      if (failure != null) {
        return CompletableFuture.completedFuture(bookFailed(failure));
      }
      ctx.metrics().routing(request.model(), System.nanoTime() - attemptStartNanos);
      return forward(booked);
    }).thenCompose(stage -> stage);
  }

  /** A Book that failed: after an engine failed this request, that failure is the answer (502/504). */
  private HttpResponse bookFailed(Throwable failure) {
    Throwable cause = unwrap(failure);
    if (cause instanceof RoutingException routing) {
      if (lastFailure != null && (RoutingError.NO_ENDPOINTS.equals(routing.error().reason())
          || RoutingError.ALL_WORKERS_OVERLOADED.equals(routing.error().reason()))) {
        return error(withNote(lastFailure.error(), "; no other worker could take the request ("
            + routing.error().reason() + ")"));
      }
      return error(FrontError.of(routing.error(), ctx.settings().retryAfterSeconds()));
    }
    return error(cause);
  }

  private CompletionStage<HttpResponse> forward(RequestBooking.Booked booked) {
    if (booked.disaggregated()) {
      return forwardPair(booked);
    }
    return exchange(booked.workerId(), booked.endpoint(), booked.requestId(), booked.dpRank(), body,
        request.stream()).handle((ok, failure) -> afterFirst(booked, ok, failure)).thenCompose(s -> s);
  }

  /**
   * vLLM's two-step protocol for a prefill/decode pair, under one X-Request-Id: the prefill request (one token, not
   * streamed, {@code kv_transfer_params.do_remote_decode}) to the prefill rank, read whole; MarkPrefillDone (frees
   * the prefill rank); then the decode request (the client's body with the {@code kv_transfer_params} the prefill
   * answered) to the decode rank, whose answer goes to the client as an aggregated rank's does. Either step failing
   * before the first byte reaches the client fails the attempt (the pair is released, the failing worker excluded).
   */
  private CompletionStage<HttpResponse> forwardPair(RequestBooking.Booked booked) {
    ByteString prefillBody;
    try {
      prefillBody = ByteString.fromArray(JSON.writeValueAsBytes(TwoStepProtocol.prefillBody(request.body())));
    } catch (JsonProcessingException e) {
      booking.finish();
      return CompletableFuture.completedFuture(error(e));
    }
    long prefillStart = System.nanoTime();
    return exchange(booked.workerId(), booked.endpoint(), booked.requestId(), booked.dpRank(), prefillBody, false)
        .thenCompose(first -> first.passThrough() ? CompletableFuture.completedFuture(first)
            : prefillAnswer(booked, first).thenCompose(params -> {
              ctx.metrics().prefilled(request.model(), booked.workerId(), booked.decode().workerId(),
                  System.nanoTime() - prefillStart);
              booking.prefillAnswered();
              ByteString decodeBody;
              try {
                decodeBody = params == null ? body
                    : ByteString.fromArray(JSON.writeValueAsBytes(TwoStepProtocol.decodeBody(request.body(), params)));
              } catch (JsonProcessingException e) {
                return CompletableFuture.<FirstBytes>failedFuture(e);
              }
              return exchange(booked.decode().workerId(), booked.decode().endpoint(), booked.requestId(),
                  booked.decode().dpRank(), decodeBody, request.stream());
            }))
        .handle((ok, failure) -> afterFirst(booked, ok, failure)).thenCompose(s -> s);
  }

  /** The prefill engine's whole answer (bounded by the body limit and the response timeout), its transfer params. */
  private CompletableFuture<Map<String, Object>> prefillAnswer(RequestBooking.Booked booked, FirstBytes first) {
    long limit = ctx.settings().maxBodyBytes();
    return Source.single(first.first()).concat(first.rest())
        .completionTimeout(ctx.settings().responseTimeout())
        .runFold(ByteString.emptyByteString(), (all, chunk) -> {
          if (all.size() + chunk.size() > limit) {
            throw new IllegalStateException("the prefill answer exceeds " + limit + " bytes");
          }
          return all.concat(chunk);
        }, ctx.materializer())
        .toCompletableFuture()
        .handle((all, failure) -> {
          if (failure != null) {
            throw new Failed(new AttemptFailure("prefill_answer_failed", booked.workerId(), new FrontError(502,
                FrontError.UPSTREAM, FrontError.ENGINE_FAILED, "prefill worker " + booked.workerId()
                + " broke its answer: " + RoutingError.truncate(String.valueOf(unwrap(failure).getMessage()), 200),
                null, 0)));
          }
          try {
            return TwoStepProtocol.transferParams(JSON.readValue(all.toArray(), Object.class));
          } catch (java.io.IOException e) {
            throw new Failed(new AttemptFailure("prefill_answer_invalid", booked.workerId(), new FrontError(502,
                FrontError.UPSTREAM, FrontError.ENGINE_FAILED, "prefill worker " + booked.workerId()
                + " answered something other than JSON", null, 0)));
          }
        });
  }

  /**
   * Sends {@code payload} to {@code worker} at {@code endpoint} and completes with the answer's first bytes, or
   * fails with {@link Failed} (refused, reset, a 5xx or 429, no first byte in time, an empty answer).
   */
  private CompletableFuture<FirstBytes> exchange(String worker, String endpoint, String requestId, int dpRank,
      ByteString payload, boolean streamed) {
    CompletableFuture<FirstBytes> first = new CompletableFuture<>();
    long timeoutMs = (streamed ? ctx.settings().firstTokenTimeout() : ctx.settings().responseTimeout())
        .toMillis();
    ScheduledFuture<?> timer = ctx.timers().schedule(() -> first.completeExceptionally(new Failed(
        new AttemptFailure("first_byte_timeout", worker, new FrontError(504, FrontError.TIMEOUT,
            FrontError.ENGINE_TIMEOUT, "worker " + worker + " sent no " + (streamed ? "token" : "answer")
                + " within " + timeoutMs + " ms", null, 0)))), timeoutMs, TimeUnit.MILLISECONDS);
    first.whenComplete((ok, failure) -> timer.cancel(false));
    HttpRequest out;
    try {
      out = HttpRequest.create()
          .withMethod(HttpMethods.POST)
          .withUri(ctx.engines().uri(endpoint, request.endpoint().path()))
          .withHeaders(engineHeaders(requestId, dpRank))
          .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, payload));
    } catch (RuntimeException e) {
      first.completeExceptionally(new Failed(new AttemptFailure("bad_endpoint", worker, new FrontError(502,
          FrontError.UPSTREAM, FrontError.ENGINE_FAILED, "worker " + worker + " has an endpoint the front "
          + "cannot reach: " + RoutingError.echo(endpoint), null, 0))));
      return first;
    }
    ctx.engines().send(out).whenCompleteAsync((response, failure) -> {
      if (failure != null) {
        first.completeExceptionally(new Failed(connectFailure(worker, unwrap(failure))));
        return;
      }
      if (first.isDone()) { // timed out before the answer came: cut it
        response.entity().getDataBytes().runWith(Sink.cancelled(), ctx.materializer());
        return;
      }
      int status = response.status().intValue();
      if (status >= 500 || status == 429) {
        response.entity().getDataBytes().runWith(Sink.cancelled(), ctx.materializer());
        first.completeExceptionally(new Failed(new AttemptFailure("status_" + status, worker, new FrontError(502,
            FrontError.UPSTREAM, FrontError.ENGINE_FAILED, "worker " + worker + " answered HTTP " + status,
            null, 0))));
        return;
      }
      boolean passThrough = status < 200 || status >= 300;
      response.entity().getDataBytes()
          .prefixAndTail(1)
          .runWith(Sink.head(), ctx.materializer())
          .whenCompleteAsync((split, error) -> {
            if (error != null) {
              first.completeExceptionally(new Failed(connectFailure(worker, unwrap(error))));
            } else if (split.first().isEmpty() && !passThrough) {
              split.second().runWith(Sink.cancelled(), ctx.materializer());
              first.completeExceptionally(new Failed(new AttemptFailure("empty_answer", worker, new FrontError(502,
                  FrontError.UPSTREAM, FrontError.ENGINE_FAILED, "worker " + worker
                  + " closed its answer before the first byte", null, 0))));
            } else if (!first.complete(new FirstBytes(response,
                split.first().isEmpty() ? ByteString.emptyByteString() : split.first().get(0), split.second(),
                passThrough, worker))) {
              split.second().runWith(Sink.cancelled(), ctx.materializer()); // timed out meanwhile
            }
          }, SAME_THREAD);
    }, SAME_THREAD);
    return first;
  }

  private CompletionStage<HttpResponse> afterFirst(RequestBooking.Booked booked, FirstBytes first,
      Throwable failure) {
    if (failure == null) {
      return CompletableFuture.completedFuture(commit(booked, first));
    }
    Throwable cause = unwrap(failure);
    if (!(cause instanceof Failed failed)) {
      booking.finish();
      return CompletableFuture.completedFuture(error(cause));
    }
    lastFailure = failed.failure;
    booking.failed(failed.failure.worker());
    ctx.metrics().retried(request.model(), failed.failure.reason());
    if (booking.attempts() >= ctx.settings().attempts()) {
      booking.finish();
      return CompletableFuture.completedFuture(error(withNote(failed.failure.error(), " (after "
          + booking.attempts() + " attempt" + (booking.attempts() == 1 ? "" : "s") + ": "
          + String.join(", ", booking.failedWorkers()) + ")")));
    }
    attemptStartNanos = System.nanoTime();
    return attempt();
  }

  private static AttemptFailure connectFailure(String worker, Throwable cause) {
    String message = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
    boolean timeout = cause instanceof TimeoutException
        || message.toLowerCase(Locale.ROOT).contains("timeout") || message.toLowerCase(Locale.ROOT).contains("timed out");
    String reason = timeout ? "connect_timeout" : message.toLowerCase(Locale.ROOT).contains("refused") ? "refused"
        : "connection_failed";
    return new AttemptFailure(reason, worker, new FrontError(timeout ? 504 : 502, timeout ? FrontError.TIMEOUT
        : FrontError.UPSTREAM, timeout ? FrontError.ENGINE_TIMEOUT : FrontError.ENGINE_FAILED, "worker "
        + worker + " failed before its first byte: " + RoutingError.truncate(message, 200), null, 0));
  }

  private List<HttpHeader> engineHeaders(String requestId, int dpRank) {
    List<HttpHeader> headers = new ArrayList<>();
    for (HttpHeader header : incoming.getHeaders()) {
      if (forwarded(header.lowercaseName())) {
        headers.add(header);
      }
    }
    headers.add(RawHeader.create("X-Request-Id", requestId));
    headers.add(RawHeader.create(FrontHeaders.DATA_PARALLEL_RANK, Integer.toString(dpRank)));
    return headers;
  }

  /** What of the client's headers the engine sees: not hop-by-hop ones, the entity's, the front's, nor the id. */
  private static boolean forwarded(String name) {
    return switch (name) {
      case "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host",
          "content-length", "content-type", "timeout-access", "x-request-id", "http2-settings", "expect" -> false;
      default -> !name.startsWith("x-kvrouter-") && !name.equals("x-data-parallel-rank");
    };
  }

  // ---------------------------------------------------------------- the answer

  /** The first byte is here: the answer goes to the client from now on; nothing is retried any more. */
  private HttpResponse commit(RequestBooking.Booked booked, FirstBytes first) {
    firstByteNanos = System.nanoTime();
    workerServed = first.worker();
    prefillServed = booked.prefillWorker();
    bookingServed = booked.requestId();
    if (first.passThrough()) {
      booking.answered(first.worker());
    } else {
      booking.started();
      ctx.metrics().timeToFirstToken(request.model(), firstByteNanos - arrivalNanos);
    }
    boolean sse = request.stream() && !first.passThrough();
    bytesOut.addAndGet(first.first().size());
    int status = first.response().status().intValue();
    Source<ByteString, NotUsed> all = first.rest()
        .idleTimeout(ctx.settings().idleTimeout())
        .via(new AnswerStream(first.first(), new AnswerStream.Listener() {
          private long last = firstByteNanos;

          @Override
          public void started() {
            bodyStarted.set(true);
            ScheduledFuture<?> guard = bodyGuard;
            if (guard != null) {
              guard.cancel(false);
            }
          }

          @Override
          public void chunk(ByteString chunk) {
            long now = System.nanoTime();
            if (sse) {
              ctx.metrics().interToken(request.model(), now - last);
            }
            last = now;
            bytesOut.addAndGet(chunk.size());
          }

          @Override
          public List<ByteString> failed(Throwable failure) {
            booking.brokeAfterStart();
            outcome = failure instanceof TimeoutException ? "idle_timeout" : "engine_failed_mid_stream";
            if (!sse) {
              return null;
            }
            FrontError error = failure instanceof TimeoutException
                ? new FrontError(504, FrontError.TIMEOUT, FrontError.ENGINE_TIMEOUT, "worker " + first.worker()
                    + " sent nothing for " + ctx.settings().idleTimeout().toMillis() + " ms", null, 0)
                : new FrontError(502, FrontError.UPSTREAM, FrontError.ENGINE_FAILED, "worker " + first.worker()
                    + " failed mid-stream: " + RoutingError.truncate(String.valueOf(failure.getMessage()), 200),
                    null, 0);
            return List.of(ByteString.fromArray(error.sseEvent()), DONE);
          }

          @Override
          public void ended(Throwable failure) {
            if (failure != null && outcome == null) {
              outcome = "client_gone";
            }
            complete(status);
          }
        }));
    HttpResponse engine = first.response();
    ContentType type = engine.entity().getContentType();
    Optional<Long> length = engine.entity().getContentLengthOption().isPresent()
        ? Optional.of(engine.entity().getContentLengthOption().getAsLong()) : Optional.empty();
    org.apache.pekko.http.javadsl.model.ResponseEntity entity = length.isPresent() && !sse
        ? HttpEntities.create(type, length.get(), all) : HttpEntities.createChunked(type, all);
    List<HttpHeader> headers = new ArrayList<>(responseHeaders(booked));
    if (sse) {
      headers.add(RawHeader.create("Cache-Control", "no-cache"));
    }
    return HttpResponse.create().withStatus(engine.status()).withHeaders(headers).withEntity(entity);
  }


  private List<HttpHeader> responseHeaders(RequestBooking.Booked booked) {
    List<HttpHeader> headers = new ArrayList<>(6);
    headers.add(RawHeader.create(FrontHeaders.REQUEST_ID, clientId));
    headers.add(RawHeader.create(FrontHeaders.WORKER, booked.servingWorker()));
    headers.add(RawHeader.create(FrontHeaders.DP_RANK, Integer.toString(booked.disaggregated()
        ? booked.decode().dpRank() : booked.dpRank())));
    if (booked.disaggregated()) {
      headers.add(RawHeader.create(FrontHeaders.PREFILL_WORKER, booked.workerId()));
      headers.add(RawHeader.create(FrontHeaders.PREFILL_DP_RANK, Integer.toString(booked.dpRank())));
    }
    SessionOutcome session = booked.answer().session();
    if (session != null) {
      headers.add(RawHeader.create(FrontHeaders.SESSION_OUTCOME, session.kind().name().toLowerCase(Locale.ROOT)));
    }
    headers.add(RawHeader.create(FrontHeaders.BOOKING_ID, booked.requestId()));
    headers.add(RawHeader.create(FrontHeaders.ATTEMPTS, Integer.toString(booked.attempt())));
    if (request.explain()) {
      var selection = booked.answer().selection();
      Set<String> failed = booking.failedWorkers();
      headers.add(RawHeader.create(FrontHeaders.EXPLAIN, String.format(Locale.ROOT,
          "policy=%s; worker=%s; dp_rank=%d; cost=%.3f; overlap_blocks=%d; cached_tokens=%d; queued_us=%d; "
              + "view_version=%d; failed=%s%s", selection.policy(), booked.workerId(), booked.dpRank(),
          selection.cost(), selection.overlapBlocks(), selection.cachedTokens(), booked.answer().queuedMicros(),
          selection.viewVersion(), failed.isEmpty() ? "-" : String.join(",", failed),
          // a pair: worker and dp_rank above are the prefill half's, chosen by the full cost
          booked.disaggregated() ? "; decode_worker=" + booked.decode().workerId() + "; decode_dp_rank="
              + booked.decode().dpRank() : "")));
    }
    return headers;
  }

  /**
   * A produced response whose body the server never starts (HTTP/1.1 gives no signal of a client that left while
   * the front waited; the server then drops the response unread) still ends the request: after a grace period.
   */
  private HttpResponse guardBody(HttpResponse response) {
    if (!finished.get()) {
      bodyGuard = ctx.timers().schedule(() -> {
        if (!bodyStarted.get() && !finished.get()) {
          outcome = "client_gone_before_body";
          complete(response.status().intValue());
        }
      }, BODY_START_GRACE_MS, TimeUnit.MILLISECONDS);
    }
    return response;
  }

  /** The request ended (its body done, failed or cancelled, or an error answered): released, counted, logged. */
  private void complete(int status) {
    if (!finished.compareAndSet(false, true)) {
      return;
    }
    if (booking != null) {
      booking.finish();
    }
    ctx.metrics().finished(request.model(), request.endpoint().path(), status);
    if (ctx.accessLog().enabled()) {
      long now = System.nanoTime();
      RequestBooking.Booked last = booking == null ? null : booking.current();
      ctx.accessLog().write(new AccessLog.Entry("POST", request.endpoint().path(), status, request.model(),
          workerServed, prefillServed, booking == null ? 0 : booking.attempts(),
          firstByteNanos == 0 ? -1 : (firstByteNanos - arrivalNanos) / 1_000, (now - arrivalNanos) / 1_000,
          bytesOut.get(), request.clientRequestId(), request.session(), bookingServed,
          outcome == null ? "ok" : outcome));
    }
  }


  // ---------------------------------------------------------------- errors

  private HttpResponse error(Throwable failure) {
    Throwable cause = unwrap(failure);
    if (cause instanceof FrontException front) {
      return error(front.error());
    }
    if (cause instanceof RoutingException routing) {
      return error(FrontError.of(routing.error(), ctx.settings().retryAfterSeconds()));
    }
    if (cause instanceof CancellationException) {
      return error(new FrontError(503, FrontError.UNAVAILABLE, "CANCELLED", "the request was cancelled", null, 0));
    }
    org.slf4j.LoggerFactory.getLogger(Forwarding.class).warn("request failed unexpectedly", cause);
    return error(new FrontError(500, FrontError.INTERNAL, FrontError.INTERNAL_ERROR, "internal error: "
        + RoutingError.truncate(String.valueOf(cause.getMessage()), 200), null, 0));
  }

  private HttpResponse error(FrontError error) {
    if (booking != null) {
      booking.finish();
    }
    if (outcome == null) {
      outcome = error.code();
    }
    HttpResponse response = FrontServer.errorResponse(error, clientId);
    complete(error.status());
    return response;
  }

  private static FrontError withNote(FrontError error, String note) {
    return new FrontError(error.status(), error.type(), error.code(), error.message() + note, error.param(),
        error.retryAfterSeconds());
  }

  private static Throwable unwrap(Throwable failure) {
    Throwable cause = failure;
    while ((cause instanceof CompletionException || cause instanceof java.util.concurrent.ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }
}
