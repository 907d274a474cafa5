package io.kvrouter.epp;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProtocolConfiguration;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.Disaggregation;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.front.FrontError;
import io.kvrouter.front.FrontException;
import io.kvrouter.front.request.ClientRequest;
import io.kvrouter.front.request.Endpoint;
import io.kvrouter.front.request.FrontHeaders;
import io.kvrouter.front.routing.BookingScope;
import io.kvrouter.front.routing.LoraAdapters;
import io.kvrouter.front.routing.RequestBooking;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One HTTP request as Envoy's ext_proc filter streams it to the picker (one gRPC stream per request), implementing
 * GIE's Endpoint Picker Protocol.
 *
 * <p>Request path. The first message's {@code protocol_config} names the body modes (absent: FULL_DUPLEX_STREAMED,
 * what GIE requires). FULL_DUPLEX_STREAMED, and STREAMED with the body sent before the headers' answer: the headers'
 * answer waits until the body has arrived (held here, at most {@code max-body-bytes}); then the body is parsed, the
 * prompt tokenized and a worker booked, and the picker answers in order headers (the destination header, the control
 * headers removed, Content-Length), body (full duplex: the body streamed back in chunks of at most 62,000 bytes;
 * streamed: one answer per chunk Envoy holds) and trailers. BUFFERED: the headers are answered at once (Envoy holds
 * them until the body is processed) and the body's answer carries the destination. Plain STREAMED (the headers must
 * be answered before any body arrives) cannot be routed by the body: 500 UNSUPPORTED_PROCESSING_MODE. The destination
 * goes in the header {@code x-gateway-destination-endpoint} and, the same string, in dynamic metadata
 * {@code envoy.lb}. Header-only requests, and paths other than the two completion endpoints, go to a random
 * worker (of the body's model when it names one with workers) and book nothing.
 *
 * <p>A body {@code model} naming a LoRA adapter that a model's workers serve books that base model with the adapter
 * as {@code lora_name}, as the front does ({@link LoraAdapters#resolve}); the body goes on unchanged.
 *
 * <p>The objective header's InferenceObjective gives the Book's priority ({@code kvrouter.epp.objectives}), the
 * fairness header its admission queue class or tenant family ({@code policy_class}).
 *
 * <p>Prefill/decode. The Book is the front's ({@link Disaggregation#AUTO}): a model with prefill and decode workers
 * books a pair (unless its conditional policy books the decode rank alone). A pair goes as llm-d's P/D does: the
 * destination is the decode worker, and {@link EppHeaders#PREFILLER} names the prefill worker's {@code ip:port} to
 * the routing sidecar on the decode pod, which has the prefill run there before its engine decodes. The decode pod's
 * answer (its response headers, not a 5xx or 429) marks the prefill done, which frees the prefill rank; the end or a
 * reset releases the pair.
 *
 * <p>Response path. The response headers get the worker and booking id headers; the first body chunk marks prefill
 * done (then the lease is renewed while the response streams); the end of the body (or trailers) releases the booking
 * and the stream's usage, read from its last {@code data:} event, is counted. A stream that ends or is reset before
 * that releases too. A served endpoint the data plane reports ({@code envoy.lb}
 * {@code x-gateway-destination-endpoint-served}) other than the booked one releases the booking at once and is
 * counted: the admission state then does not hold a booking on an engine that does not run the request.
 *
 * <p>Every entry point runs under this object's lock: grpc-java delivers a call's messages one at a time, and the
 * booking's completions (on other threads) take the same lock before they write.
 */
final class PickerStream implements StreamObserver<ProcessingRequest> {
  private static final Logger log = LoggerFactory.getLogger(PickerStream.class);
  private static final int MAX_BOOK_ATTEMPTS = 3;

  private enum Phase { HEADERS, BODY, PICKING, FORWARDED, RESPONSE, DONE }

  private final EppContext ctx;
  private final ServerCallStreamObserver<ProcessingResponse> out;

  private Phase phase = Phase.HEADERS;
  private BodySendMode requestMode = BodySendMode.FULL_DUPLEX_STREAMED;
  private BodySendMode responseMode = BodySendMode.FULL_DUPLEX_STREAMED;
  private boolean earlyBody = true;
  private boolean headersAnswered;
  private Map<String, String> headers = Map.of();
  private String path = "";
  private List<Destination> subset;
  private ByteString body = ByteString.EMPTY;
  private int heldChunks;
  private boolean requestTrailers;
  private long bodyEndNanos;

  private String model;
  private SelectionRequest selection;
  private RequestBooking booking;
  private RequestBooking.Booked booked;
  private Destination destination;
  /** A pair's prefill half, named to the decode pod in {@link EppHeaders#PREFILLER}; null for one rank. */
  private Destination prefill;
  private int status;
  private boolean firstResponseChunk = true;
  private UsageScanner usage;
  private String outcome;
  private boolean finished;

  PickerStream(EppContext ctx, StreamObserver<ProcessingResponse> out) {
    this.ctx = ctx;
    this.out = (ServerCallStreamObserver<ProcessingResponse>) out;
    ctx.metrics().opened();
  }

  @Override
  public synchronized void onNext(ProcessingRequest request) {
    if (phase == Phase.DONE) {
      return;
    }
    try {
      if (request.hasProtocolConfig()) {
        ProtocolConfiguration config = request.getProtocolConfig();
        requestMode = config.getRequestBodyMode();
        responseMode = config.getResponseBodyMode();
        earlyBody = requestMode == BodySendMode.FULL_DUPLEX_STREAMED
            || config.getSendBodyWithoutWaitingForHeaderResponse();
      }
      if (subset == null && request.hasMetadataContext()) {
        subset = SubsetHint.of(request.getMetadataContext());
      }
      switch (request.getRequestCase()) {
        case REQUEST_HEADERS -> requestHeaders(request.getRequestHeaders());
        case REQUEST_BODY -> requestBody(request.getRequestBody());
        case REQUEST_TRAILERS -> requestTrailers();
        case RESPONSE_HEADERS -> responseHeaders(request.getResponseHeaders(), request.getMetadataContext());
        case RESPONSE_BODY -> responseBody(request.getResponseBody());
        case RESPONSE_TRAILERS -> responseTrailers();
        case REQUEST_NOT_SET -> refuse(FrontError.badRequest(FrontError.INVALID_BODY,
            "a ProcessingRequest without a request"));
      }
    } catch (RuntimeException e) {
      log.warn("endpoint picker stream failed", e);
      refuse(new FrontError(500, FrontError.INTERNAL, FrontError.INTERNAL_ERROR, "internal error: "
          + RoutingError.truncate(String.valueOf(e.getMessage()), 200), null, 0));
    }
  }

  @Override
  public synchronized void onError(Throwable t) {
    // Envoy reset the stream: the client went away, or the request ended without its last phases
    if (outcome == null) {
      outcome = "reset";
    }
    finish();
  }

  @Override
  public synchronized void onCompleted() {
    if (outcome == null) {
      outcome = phase == Phase.RESPONSE || phase == Phase.FORWARDED ? "ended" : "ended_early";
    }
    finish();
    try {
      out.onCompleted();
    } catch (IllegalStateException alreadyClosed) {
      // an immediate response closed it
    }
  }

  // ------------------------------------------------------------------ request

  private void requestHeaders(HttpHeaders message) {
    if (phase != Phase.HEADERS) {
      refuse(FrontError.badRequest(FrontError.INVALID_BODY, "request headers sent twice"));
      return;
    }
    headers = Messages.headers(message.getHeaders());
    String fullPath = headers.getOrDefault(":path", "");
    int query = fullPath.indexOf('?');
    path = query < 0 ? fullPath : fullPath.substring(0, query);
    if (message.getEndOfStream()) {
      // no body (GET /v1/models, /health): any worker serves it, nothing is booked
      passThrough(null);
      return;
    }
    phase = Phase.BODY;
    if (requestMode == BodySendMode.BUFFERED || requestMode == BodySendMode.BUFFERED_PARTIAL) {
      // Envoy holds the headers until the body is processed: the body's answer carries the destination
      send(Messages.requestHeaders(CommonResponse.newBuilder().setHeaderMutation(removeControlHeaders()).build()));
      headersAnswered = true;
    } else if (!earlyBody) {
      refuse(Refusals.unsupportedMode("the endpoint picker routes by the request body, which this gateway sends "
          + "only after the headers were answered: set request_body_mode FULL_DUPLEX_STREAMED (or BUFFERED, or "
          + "STREAMED with send_body_without_waiting_for_header_response)"));
    }
  }

  private void requestBody(HttpBody message) {
    if (phase != Phase.BODY) {
      if (phase == Phase.HEADERS) {
        refuse(FrontError.badRequest(FrontError.INVALID_BODY, "a request body before the request headers"));
      }
      return; // a chunk after the request was refused or routed: nothing to add
    }
    ByteString chunk = message.getBody();
    if ((long) body.size() + chunk.size() > ctx.settings().maxBodyBytes()) {
      refuse(Refusals.tooLarge(ctx.settings().maxBodyBytes()));
      return;
    }
    body = body.concat(chunk);
    heldChunks++;
    if (message.getEndOfStream()) {
      pick();
    }
  }

  private void requestTrailers() {
    if (phase == Phase.BODY) {
      requestTrailers = true; // the trailers end the request: its body is complete
      pick();
    } else if (phase == Phase.FORWARDED || phase == Phase.RESPONSE) {
      send(Messages.requestTrailers());
    }
  }

  private void pick() {
    phase = Phase.PICKING;
    bodyEndNanos = System.nanoTime();
    Endpoint endpoint = Endpoint.of(path);
    ClientRequest request;
    try {
      request = ctx.parser().parse(endpoint == null ? Endpoint.COMPLETIONS : endpoint, body.toByteArray(),
          headers::get);
    } catch (FrontException e) {
      if (endpoint == null) {
        passThrough(null); // not a completion: the model server judges its own body
      } else {
        refuse(e.error());
      }
      return;
    }
    model = request.model();
    if (endpoint == null) {
      passThrough(model);
      return;
    }
    // an adapter named in 'model' books its base model with the adapter as loraName, as the front books it
    request = LoraAdapters.resolve(ctx.cluster(), request);
    model = request.model();
    // the InferenceObjective's priority, and the fairness id as the admission queue's class or tenant family (an
    // explicit x-kvrouter-policy-class wins)
    String objective = firstOf(EppHeaders.OBJECTIVE, EppHeaders.OBJECTIVE_LEGACY);
    String fairness = firstOf(EppHeaders.FAIRNESS, EppHeaders.FAIRNESS_LEGACY);
    if (objective != null || (fairness != null && request.policyClass().isEmpty())) {
      request = request.withPriority(objective != null ? ctx.settings().priority(objective) : request.priority(),
          request.policyClass().isEmpty() && fairness != null ? fairness : request.policyClass());
    }
    // as the front books: a prefill/decode pair where the model has both roles (unless its conditional policy books
    // the decode rank alone), else one rank; a pair goes to its decode pod, whose routing sidecar runs the prefill
    request = request.withDisaggregation(Disaggregation.AUTO);
    BookingScope scope;
    try {
      scope = BookingScope.resolve(ctx.cluster(), model, request.global());
    } catch (RoutingException e) {
      refuse(Refusals.of(e.error(), ctx.retryAfterSeconds()));
      return;
    }
    Set<String> eligible;
    if (subset != null) {
      eligible = eligibleWorkers(scope.client(ctx.cluster()).view());
      if (eligible.isEmpty()) {
        refuse(Refusals.noEndpoint(subset.isEmpty() ? "the subset hint is empty"
            : "no worker of " + RoutingError.echo(model) + " is in the subset hint " + subset, ctx.retryAfterSeconds()));
        return;
      }
    } else {
      eligible = Set.of();
    }
    String base = "epp-" + clientId(request) + "-"
        + Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
    ctx.routing().route(request, scope, base + "/0").whenComplete((routed, failure) -> {
      synchronized (this) {
        if (phase != Phase.PICKING) {
          return; // reset meanwhile
        }
        if (failure != null) {
          refuse(unwrap(failure));
          return;
        }
        selection = eligible.isEmpty() ? routed.request() : routed.request().withAllowedWorkers(eligible);
        booking = new RequestBooking(ctx.cluster(), scope, selection, base, ctx.settings().bookTimeout(),
            ctx.settings().mutationTimeout(), ctx.settings().renewInterval(), ctx.shared().timers(),
            ctx.shared().breakers(), ctx.metrics());
        book();
      }
    });
  }

  private void book() {
    booking.book().whenComplete((answer, failure) -> {
      synchronized (this) {
        if (phase != Phase.PICKING) {
          return; // the stream ended meanwhile: RequestBooking undid the Book
        }
        if (failure != null) {
          refuse(unwrap(failure));
          return;
        }
        // a pair: Envoy sends the request to the decode half, which is told where the prefill half is
        Destination picked = Destination.ofEndpoint(answer.disaggregated() ? answer.decode().endpoint()
            : answer.endpoint());
        Destination prefillAt = answer.disaggregated() ? Destination.ofEndpoint(answer.endpoint()) : null;
        String unusable = picked == null ? answer.servingWorker()
            : answer.disaggregated() && prefillAt == null ? answer.workerId() : null;
        if (unusable != null) {
          log.warn("worker {} of {} has no usable endpoint ({}): booking another", unusable, model,
              RoutingError.echo(unusable.equals(answer.workerId()) ? answer.endpoint() : answer.decode().endpoint()));
          booking.failed(unusable);
          if (booking.attempts() >= MAX_BOOK_ATTEMPTS) {
            refuse(new FrontError(503, FrontError.UNAVAILABLE, Refusals.NO_USABLE_ENDPOINT, "no worker of "
                + RoutingError.echo(model) + " has an endpoint the gateway can reach (ip:port)", null,
                ctx.retryAfterSeconds()));
            return;
          }
          book();
          return;
        }
        booked = answer;
        destination = picked;
        prefill = prefillAt;
        ctx.metrics().picked(model, System.nanoTime() - bodyEndNanos);
        forward(destinations(picked));
      }
    });
  }

  /**
   * The booked endpoint, then up to {@code fallbacks} next-best ones by the same policy (advisory picks); a pair's
   * decode endpoint alone (the prefill header names the booked prefill half, which another endpoint would not have).
   */
  private String destinations(Destination first) {
    int fallbacks = ctx.settings().fallbacks();
    if (fallbacks == 0 || booked.disaggregated()) {
      return first.toString();
    }
    List<String> list = new ArrayList<>();
    list.add(first.toString());
    Set<String> excluded = new LinkedHashSet<>(booking.failedWorkers());
    excluded.add(booked.workerId());
    excluded.addAll(ctx.shared().breakers().excluded(model));
    for (int i = 0; i < fallbacks; i++) {
      SelectionResult next;
      try {
        next = booking.scope().client(ctx.cluster()).selectWithoutAdmission(fallbackRequest(excluded));
      } catch (RoutingException e) {
        break; // no other candidate
      }
      excluded.add(next.rank().workerId());
      Destination d = Destination.ofEndpoint(next.endpoint());
      if (d != null && !list.contains(d.toString())) {
        list.add(d.toString());
      }
    }
    return String.join(",", list);
  }

  private SelectionRequest fallbackRequest(Set<String> excluded) {
    return selection.withRequestId(booked.requestId() + "-fallback").withExcludedWorkers(Set.copyOf(excluded));
  }

  private Set<String> eligibleWorkers(SelectionView view) {
    Set<String> out = new HashSet<>();
    if (view == null) {
      return out;
    }
    for (WorkerConfig worker : view.workers().values()) {
      if (SubsetHint.admits(subset, Destination.ofEndpoint(worker.endpoint()))) {
        out.add(worker.workerId());
      }
    }
    return out;
  }

  /** Header-only requests and other paths: a random worker (of {@code model} when it has workers), no booking. */
  private void passThrough(String forModel) {
    List<Destination> candidates = new ArrayList<>();
    List<String> models = forModel != null && hasWorkers(forModel) ? List.of(forModel) : ctx.cluster().models();
    for (String name : models) {
      SelectionView view = ctx.cluster().view(name);
      if (view == null) {
        continue;
      }
      Set<String> open = ctx.shared().breakers().excluded(name);
      for (WorkerConfig worker : view.workers().values()) {
        Destination d = Destination.ofEndpoint(worker.endpoint());
        if (d != null && !open.contains(worker.workerId()) && (subset == null || SubsetHint.admits(subset, d))) {
          candidates.add(d);
        }
      }
    }
    if (candidates.isEmpty()) {
      refuse(Refusals.noEndpoint("no worker can take the request" + (subset == null ? "" : " in the subset hint "
          + subset), ctx.retryAfterSeconds()));
      return;
    }
    destination = candidates.get(ThreadLocalRandom.current().nextInt(candidates.size()));
    outcome = "passed";
    forward(destination.toString());
  }

  private boolean hasWorkers(String name) {
    SelectionView view = ctx.cluster().view(name);
    return view != null && !view.isEmpty();
  }

  /** The answers that send the request on to {@code target}, in the order the body mode needs. */
  private void forward(String target) {
    HeaderMutation.Builder mutation = removeControlHeaders().toBuilder()
        .addSetHeaders(Messages.set(EppHeaders.DESTINATION, target));
    if (prefill != null) {
      mutation.addSetHeaders(Messages.set(EppHeaders.PREFILLER, prefill.toString()));
    }
    Struct metadata = Messages.destinationMetadata(target);
    boolean headerOnly = phase == Phase.HEADERS;
    phase = Phase.FORWARDED;
    if (headerOnly) {
      send(Messages.requestHeaders(CommonResponse.newBuilder().setHeaderMutation(mutation)
          .setClearRouteCache(true).build()).toBuilder().setDynamicMetadata(metadata).build());
      return;
    }
    if (headersAnswered) { // BUFFERED: the body's answer mutates the held headers
      send(Messages.requestBody(CommonResponse.newBuilder().setHeaderMutation(mutation).setClearRouteCache(true)
          .build()).toBuilder().setDynamicMetadata(metadata).build());
    } else {
      if (requestMode == BodySendMode.FULL_DUPLEX_STREAMED) {
        mutation.addSetHeaders(Messages.set("content-length", Integer.toString(body.size())));
      }
      send(Messages.requestHeaders(CommonResponse.newBuilder().setHeaderMutation(mutation)
          .setClearRouteCache(true).build()).toBuilder().setDynamicMetadata(metadata).build());
      headersAnswered = true;
      if (requestMode == BodySendMode.FULL_DUPLEX_STREAMED) {
        // the body goes on as it came, in chunks Envoy accepts; trailers (if any) end the request after it
        if (!(requestTrailers && body.isEmpty())) {
          List<ByteString> chunks = Messages.chunks(body);
          for (int i = 0; i < chunks.size(); i++) {
            send(Messages.requestBody(Messages.streamed(chunks.get(i), i == chunks.size() - 1 && !requestTrailers)));
          }
        }
      } else {
        for (int i = 0; i < heldChunks; i++) { // STREAMED: one answer per chunk Envoy holds, unchanged
          send(Messages.requestBody(CommonResponse.getDefaultInstance()));
        }
      }
    }
    if (requestTrailers) {
      send(Messages.requestTrailers());
    }
    body = ByteString.EMPTY;
  }

  private HeaderMutation removeControlHeaders() {
    return HeaderMutation.newBuilder().addAllRemoveHeaders(Messages.controlHeaders(headers)).build();
  }

  // ------------------------------------------------------------------ response

  private void responseHeaders(HttpHeaders message, Metadata metadata) {
    if (phase != Phase.FORWARDED) {
      return;
    }
    phase = Phase.RESPONSE;
    Map<String, String> response = Messages.headers(message.getHeaders());
    status = parseStatus(response.get(":status"));
    String type = response.getOrDefault("content-type", "");
    usage = new UsageScanner(type.startsWith("text/event-stream"), ctx.settings().maxUsageBytes());
    HeaderMutation.Builder mutation = HeaderMutation.newBuilder();
    if (booked != null) {
      mutation.addSetHeaders(Messages.set(FrontHeaders.WORKER, booked.servingWorker()))
          .addSetHeaders(Messages.set(FrontHeaders.DP_RANK, Integer.toString(booked.disaggregated()
              ? booked.decode().dpRank() : booked.dpRank())));
      if (booked.disaggregated()) {
        mutation.addSetHeaders(Messages.set(FrontHeaders.PREFILL_WORKER, booked.workerId()))
            .addSetHeaders(Messages.set(FrontHeaders.PREFILL_DP_RANK, Integer.toString(booked.dpRank())));
      }
      mutation.addSetHeaders(Messages.set(FrontHeaders.BOOKING_ID, booked.requestId()));
      String served = servedEndpoint(metadata);
      if (served != null && !served.equals(destination.toString())) {
        // a retry or a fallback served it: the booked engine does not run this request
        ctx.metrics().servedElsewhere(model);
        outcome = "served_elsewhere";
        releaseBooking();
      } else if (status >= 500 || status == 429) {
        booking.brokeAfterStart(); // the breaker counts the worker's failure; the client gets its answer
      } else {
        if (booked.disaggregated()) {
          // the decode pod's sidecar answers once the prefill pod has answered it: the prefill rank is freed now
          booking.prefillAnswered();
        }
        if (status >= 300 || status < 200) {
          booking.answered();
        }
      }
    }
    send(Messages.responseHeaders(CommonResponse.newBuilder().setHeaderMutation(mutation).build()));
    if (message.getEndOfStream()) {
      outcome = outcome == null ? "ok" : outcome;
      finish();
    }
  }

  private void responseBody(HttpBody message) {
    if (phase != Phase.RESPONSE) {
      return;
    }
    ByteString chunk = message.getBody();
    if (firstResponseChunk && booking != null && status >= 200 && status < 300) {
      booking.started(); // prefill is done at the first byte (streaming: the first token)
    }
    firstResponseChunk = false;
    usage.feed(chunk.toByteArray());
    if (responseMode == BodySendMode.FULL_DUPLEX_STREAMED) {
      send(Messages.responseBody(Messages.streamed(chunk, message.getEndOfStream())));
    } else {
      send(Messages.responseBody(CommonResponse.getDefaultInstance()));
    }
    if (message.getEndOfStream()) {
      outcome = outcome == null ? "ok" : outcome;
      finish();
    }
  }

  private void responseTrailers() {
    if (phase == Phase.RESPONSE) {
      send(Messages.responseTrailers());
    }
    outcome = outcome == null ? "ok" : outcome;
    finish();
  }

  private static String servedEndpoint(Metadata metadata) {
    Struct lb = metadata.getFilterMetadataMap().get(EppHeaders.LB_NAMESPACE);
    if (lb == null) {
      return null;
    }
    Value served = lb.getFieldsMap().get(EppHeaders.SERVED);
    if (served == null || !served.hasStringValue()) {
      return null;
    }
    Destination d = Destination.ofHint(served.getStringValue());
    return d == null ? null : d.toString();
  }

  private static int parseStatus(String value) {
    try {
      return value == null ? 0 : Integer.parseInt(value.strip());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  // ------------------------------------------------------------------ ends

  private void refuse(Throwable failure) {
    if (failure instanceof FrontException front) {
      refuse(front.error());
    } else if (failure instanceof RoutingException routing) {
      refuse(Refusals.of(routing.error(), ctx.retryAfterSeconds()));
    } else {
      log.warn("endpoint picker request failed unexpectedly", failure);
      refuse(new FrontError(500, FrontError.INTERNAL, FrontError.INTERNAL_ERROR, "internal error: "
          + RoutingError.truncate(String.valueOf(failure.getMessage()), 200), null, 0));
    }
  }

  /** Answers the request with {@code error} (Envoy sends it to the client) and ends the stream. */
  private void refuse(FrontError error) {
    if (phase == Phase.DONE) {
      return;
    }
    status = error.status();
    outcome = error.code();
    send(Messages.immediate(error));
    finish();
    try {
      out.onCompleted();
    } catch (IllegalStateException alreadyClosed) {
      // the call ended meanwhile
    }
  }

  private void releaseBooking() {
    if (booking != null) {
      booking.finish();
    }
  }

  /** The request ended (its response, an immediate answer, or the stream's end or reset): released, counted. */
  private void finish() {
    if (finished) {
      return;
    }
    finished = true;
    phase = Phase.DONE;
    releaseBooking();
    if (usage != null && booked != null) {
      UsageScanner.Usage reported = usage.finish();
      if (reported != null) {
        ctx.metrics().usage(model, reported);
      }
    }
    ctx.metrics().finished(model, status, outcome == null ? "ok" : outcome);
    ctx.metrics().closed();
  }

  private void send(ProcessingResponse response) {
    try {
      out.onNext(response);
    } catch (RuntimeException e) {
      // the call was cancelled meanwhile (grpc-java refuses writes after a cancel)
      log.debug("endpoint picker answer not sent: {}", e.toString());
    }
  }

  private String firstOf(String name, String legacy) {
    String value = headers.get(name);
    if (value == null || value.isBlank()) {
      value = headers.get(legacy);
    }
    return value == null || value.isBlank() ? null : value.strip();
  }

  private static String clientId(ClientRequest request) {
    return request.clientRequestId() != null ? request.clientRequestId()
        : Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
  }

  private static Throwable unwrap(Throwable failure) {
    Throwable cause = failure;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }
}
