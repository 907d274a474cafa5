package io.kvrouter.sim.http;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The counters the wall-clock driver reads from an engine's own /metrics (vLLM's names, summed over the engine's
 * ranks): what the engine says it served from its prefix cache, whoever routed the requests.
 */
public record EngineCounters(double prefixQueries, double prefixHits, double promptTokens, double generationTokens,
    double finishedRequests) {

  private static final Pattern SAMPLE = Pattern.compile("(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*\\})? (\\S+)$");

  public static EngineCounters scrape(HttpClient http, String metricsUrl) throws IOException, InterruptedException {
    HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(metricsUrl))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() != 200) {
      throw new IOException(metricsUrl + " answered " + response.statusCode());
    }
    return parse(response.body());
  }

  static EngineCounters parse(String text) {
    double queries = 0;
    double hits = 0;
    double prompt = 0;
    double generation = 0;
    double finished = 0;
    Matcher m = SAMPLE.matcher(text);
    while (m.find()) {
      double value = Double.parseDouble(m.group(3));
      switch (m.group(1)) {
        case "vllm:prefix_cache_queries_total" -> queries += value;
        case "vllm:prefix_cache_hits_total" -> hits += value;
        case "vllm:prompt_tokens_total" -> prompt += value;
        case "vllm:generation_tokens_total" -> generation += value;
        case "vllm:request_success_total" -> finished += value;
        default -> { }
      }
    }
    return new EngineCounters(queries, hits, prompt, generation, finished);
  }

  public EngineCounters minus(EngineCounters before) {
    return new EngineCounters(prefixQueries - before.prefixQueries, prefixHits - before.prefixHits,
        promptTokens - before.promptTokens, generationTokens - before.generationTokens,
        finishedRequests - before.finishedRequests);
  }
}
