package io.kvrouter.sim.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvrouter.sim.workload.Workload;
import io.kvrouter.sim.workload.WorkloadRequest;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Drives a workload on wall-clock time through an HTTP endpoint that speaks the OpenAI API: a router's front, a peer
 * router's proxy, or (target {@code null}) the engines themselves in turn, the baseline without a router. Each
 * request is a streamed /v1/completions with the prompt as token ids and a fixed output length (max_tokens =
 * min_tokens, ignore_eos), asking for the output's token ids so that a conversation's next turn carries what the
 * engine produced (a proxy that drops them leaves the workload's own tokens, counted). Simulated time runs
 * {@code timeScale} times faster than the wall clock, as the engines' own (start them with the same --time-scale).
 *
 * <p>The hit rate comes from the engines' own counters (vLLM's prefix-cache queries and hits, before and after),
 * whatever routed the requests; TTFT and end-to-end latency are measured here, client-side, and reported in simulated
 * time (wall time × the scale).
 */
public final class HttpDriver {
  /** Where requests go and how hard. */
  public record Settings(URI target, List<URI> engineBaseUrls, List<URI> metricsUrls, String model, double timeScale,
      int maxInFlight, Duration timeout) {}

  /** What one run measured. */
  public record Result(String target, long completed, long failed, long withoutTokenIds, long promptTokensSent,
      long cachedTokensReported, EngineCounters engines, double[] promptTokensPerEngine, long[] ttftMicros,
      long[] endToEndMicros, long outputTokens, long makespanMicros, double wallSeconds) {

    /** Prompt tokens the engines served from their caches over the prompt tokens they were asked about. */
    public double hitRate() {
      return engines.prefixQueries() == 0 ? 0 : engines.prefixHits() / engines.prefixQueries();
    }

    /** The busiest engine's prompt tokens over the mean. */
    public double balance() {
      double mean = Arrays.stream(promptTokensPerEngine).average().orElse(0);
      return mean == 0 ? 0 : Arrays.stream(promptTokensPerEngine).max().orElse(0) / mean;
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Settings settings;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private final ScheduledExecutorService loop = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "sim-http-driver");
    t.setDaemon(true);
    return t;
  });
  private final ArrayDeque<WorkloadRequest> waiting = new ArrayDeque<>();
  private final List<Long> ttft = new ArrayList<>();
  private final List<Long> endToEnd = new ArrayList<>();
  private final CountDownLatch finished = new CountDownLatch(1);
  private Workload workload;
  private long startNanos;
  private long scheduled;
  private int inFlight;
  private int nextEngine;
  private long completed;
  private long failed;
  private long withoutTokenIds;
  private long promptTokensSent;
  private long cachedReported;
  private long outputTokens;
  private long firstArrivalMicros = -1;
  private long lastCompletionMicros;

  public HttpDriver(Settings settings) {
    this.settings = settings;
  }

  /** Runs the workload to its end (or the timeout, which fails the run). */
  public Result run(Workload source) throws IOException, InterruptedException {
    this.workload = source;
    List<EngineCounters> before = scrapeAll();
    startNanos = System.nanoTime();
    loop.execute(() -> {
      workload.start(this::schedule);
      checkDone();
    });
    boolean done = finished.await(settings.timeout().toMillis(), TimeUnit.MILLISECONDS);
    loop.shutdownNow();
    if (!done) {
      throw new IllegalStateException("the workload did not finish within " + settings.timeout() + ": " + completed
          + " completed, " + inFlight + " in flight");
    }
    double wall = (System.nanoTime() - startNanos) / 1e9;
    List<EngineCounters> after = scrapeAll();
    EngineCounters total = new EngineCounters(0, 0, 0, 0, 0);
    double[] perEngine = new double[after.size()];
    for (int i = 0; i < after.size(); i++) {
      EngineCounters delta = after.get(i).minus(before.get(i));
      perEngine[i] = delta.promptTokens();
      total = new EngineCounters(total.prefixQueries() + delta.prefixQueries(),
          total.prefixHits() + delta.prefixHits(), total.promptTokens() + delta.promptTokens(),
          total.generationTokens() + delta.generationTokens(), total.finishedRequests() + delta.finishedRequests());
    }
    return new Result(settings.target() == null ? "round robin over the engines (no router)"
        : settings.target().toString(), completed, failed, withoutTokenIds, promptTokensSent, cachedReported, total,
        perEngine, sorted(ttft), sorted(endToEnd), outputTokens, Math.max(0, lastCompletionMicros - firstArrivalMicros),
        wall);
  }

  private List<EngineCounters> scrapeAll() throws IOException, InterruptedException {
    List<EngineCounters> counters = new ArrayList<>();
    for (URI url : settings.metricsUrls()) {
      counters.add(EngineCounters.scrape(http, url.toString()));
    }
    return counters;
  }

  /** Simulated microseconds since the start. */
  private long nowMicros() {
    return Math.round((System.nanoTime() - startNanos) / 1000.0 * settings.timeScale());
  }

  private void schedule(long simMicros, WorkloadRequest request) {
    scheduled++;
    long delayNanos = Math.max(0, Math.round((simMicros - nowMicros()) * 1000 / settings.timeScale()));
    loop.schedule(() -> {
      scheduled--;
      waiting.add(request);
      dispatch();
    }, delayNanos, TimeUnit.NANOSECONDS);
  }

  private void dispatch() {
    while (inFlight < settings.maxInFlight() && !waiting.isEmpty()) {
      send(waiting.poll());
    }
    checkDone();
  }

  private void checkDone() {
    if (scheduled == 0 && inFlight == 0 && waiting.isEmpty()) {
      finished.countDown();
    }
  }

  private void send(WorkloadRequest request) {
    inFlight++;
    long arrival = nowMicros();
    if (firstArrivalMicros < 0) {
      firstArrivalMicros = arrival;
    }
    int output = request.outputTokens();
    ObjectNode body = JSON.createObjectNode();
    body.put("model", settings.model());
    ArrayNode prompt = body.putArray("prompt");
    for (int i = 0; i < request.promptTokens(); i++) {
      prompt.add(request.tokens()[i]);
    }
    body.put("max_tokens", output);
    body.put("min_tokens", output);
    body.put("ignore_eos", true);
    body.put("stream", true);
    body.putObject("stream_options").put("include_usage", true);
    body.put("return_token_ids", true);
    URI base = settings.target() != null ? settings.target()
        : settings.engineBaseUrls().get(nextEngine++ % settings.engineBaseUrls().size());
    HttpRequest http = HttpRequest.newBuilder(base.resolve("/v1/completions"))
        .header("Content-Type", "application/json")
        .timeout(settings.timeout())
        .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
    StreamReader reader = new StreamReader(arrival);
    promptTokensSent += request.promptTokens();
    this.http.sendAsync(http, HttpResponse.BodyHandlers.fromLineSubscriber(reader))
        .whenComplete((response, error) -> loop.execute(() -> done(request, reader, response, error)));
  }

  private void done(WorkloadRequest request, StreamReader reader, HttpResponse<Void> response, Throwable error) {
    inFlight--;
    long now = nowMicros();
    boolean ok = error == null && response.statusCode() == 200 && reader.finished;
    WorkloadRequest next = request;
    if (ok) {
      completed++;
      lastCompletionMicros = now;
      ttft.add(reader.firstTokenMicros - reader.arrivalMicros);
      endToEnd.add(now - reader.arrivalMicros);
      outputTokens += reader.outputTokens;
      cachedReported += reader.cachedTokens;
      if (reader.tokenIds.size() == request.outputTokens()) {
        int[] tokens = Arrays.copyOf(request.tokens(), request.tokens().length);
        for (int i = 0; i < reader.tokenIds.size(); i++) {
          tokens[request.promptTokens() + i] = reader.tokenIds.get(i);
        }
        next = new WorkloadRequest(request.id(), request.session(), tokens, request.promptTokens());
      } else {
        withoutTokenIds++;
      }
    } else {
      failed++;
    }
    workload.finished(next, now, this::schedule);
    dispatch();
  }

  /** Reads one SSE stream: first token time, output token ids, the usage chunk, the end marker. */
  private final class StreamReader implements Flow.Subscriber<String> {
    final long arrivalMicros;
    long firstTokenMicros = -1;
    long outputTokens;
    long cachedTokens;
    boolean finished;
    final List<Integer> tokenIds = new ArrayList<>();

    StreamReader(long arrivalMicros) {
      this.arrivalMicros = arrivalMicros;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      subscription.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(String line) {
      if (!line.startsWith("data: ")) {
        return;
      }
      String data = line.substring(6).trim();
      if (data.equals("[DONE]")) {
        finished = true;
        return;
      }
      try {
        JsonNode chunk = JSON.readTree(data);
        for (JsonNode choice : chunk.path("choices")) {
          boolean hasOutput = !choice.path("text").asText("").isEmpty() || choice.path("token_ids").size() > 0;
          if (hasOutput && firstTokenMicros < 0) {
            firstTokenMicros = nowMicros();
          }
          choice.path("token_ids").forEach(id -> tokenIds.add(id.asInt()));
        }
        JsonNode usage = chunk.get("usage");
        if (usage != null && !usage.isNull() && chunk.path("choices").isEmpty()) {
          outputTokens = usage.path("completion_tokens").asLong();
          cachedTokens = usage.path("prompt_tokens_details").path("cached_tokens").asLong();
        }
      } catch (IOException e) {
        finished = false;
      }
    }

    @Override
    public void onError(Throwable throwable) {
      finished = false;
    }

    @Override
    public void onComplete() {}
  }

  private static long[] sorted(List<Long> values) {
    return values.stream().mapToLong(Long::longValue).sorted().toArray();
  }
}
