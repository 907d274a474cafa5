package io.kvrouter.engines.metrics;

import io.kvrouter.engines.config.EngineKind;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Scrapes engines' {@code /metrics} pages, each every interval (the next scrape of an engine is scheduled when the
 * previous one ended, so a slow engine never has two in flight). One per node: a scheduler thread and a small pool
 * for the HTTP client and the parsing.
 */
public final class Scraper implements AutoCloseable {
  /** A page larger than this is an error, not read further. */
  static final int MAX_PAGE_BYTES = 16 << 20;

  /** What is scraped and who hears of it. */
  public interface Target {
    String metricsUrl();

    EngineKind kind();

    /** SGLang's page size (null: 1); unused for vLLM. */
    Integer pageSize();

    void scraped(EngineMetrics metrics);

    void scrapeFailed(String error);
  }

  /** Stops one target's scrapes. */
  public interface Handle {
    void cancel();
  }

  private final Duration interval;
  private final Duration timeout;
  private final ScheduledExecutorService scheduler;
  private final ExecutorService workers;
  private final HttpClient http;

  public Scraper(Duration interval, Duration timeout) {
    this.interval = interval;
    this.timeout = timeout;
    this.scheduler = Executors.newSingleThreadScheduledExecutor(daemon("kvrouter-engines-scrape-timer"));
    this.workers = Executors.newFixedThreadPool(2, daemon("kvrouter-engines-scrape"));
    this.http = HttpClient.newBuilder().connectTimeout(timeout).executor(workers)
        .followRedirects(HttpClient.Redirect.NEVER).build();
  }

  public Handle start(Target target) {
    ScrapeLoop loop = new ScrapeLoop(target);
    scheduler.execute(loop::scrape);
    return loop::cancel;
  }

  /** One scrape now, outside any schedule (benchmarks and tests); completes with the figures or throws. */
  public EngineMetrics scrapeOnce(String url, EngineKind kind, Integer pageSize) throws Exception {
    HttpResponse<InputStream> response = http.send(request(url), HttpResponse.BodyHandlers.ofInputStream());
    return read(response, kind, pageSize);
  }

  private final class ScrapeLoop {
    private final Target target;
    private volatile boolean cancelled;

    ScrapeLoop(Target target) {
      this.target = target;
    }

    void cancel() {
      cancelled = true;
    }

    void scrape() {
      if (cancelled) {
        return;
      }
      HttpRequest request;
      try {
        request = request(target.metricsUrl());
      } catch (IllegalArgumentException e) {
        target.scrapeFailed("bad metrics_url: " + e.getMessage());
        next();
        return;
      }
      http.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream()).whenCompleteAsync((response, failure) -> {
        try {
          if (cancelled) {
            return;
          }
          if (failure != null) {
            Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
            target.scrapeFailed(cause.getClass().getSimpleName()
                + (cause.getMessage() == null ? "" : ": " + cause.getMessage()));
            return;
          }
          target.scraped(read(response, target.kind(), target.pageSize()));
        } catch (Exception e) {
          target.scrapeFailed(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
        } finally {
          next();
        }
      }, workers);
    }

    private void next() {
      if (!cancelled && !scheduler.isShutdown()) {
        scheduler.schedule(this::scrape, interval.toMillis(), TimeUnit.MILLISECONDS);
      }
    }
  }

  private HttpRequest request(String url) {
    return HttpRequest.newBuilder(URI.create(url)).timeout(timeout).GET()
        .header("Accept", "text/plain;version=0.0.4").build();
  }

  private static EngineMetrics read(HttpResponse<InputStream> response, EngineKind kind, Integer pageSize)
      throws IOException, PrometheusText.MalformedPageException {
    try (InputStream body = response.body()) {
      if (response.statusCode() != 200) {
        throw new IOException("HTTP " + response.statusCode());
      }
      byte[] page = body.readNBytes(MAX_PAGE_BYTES + 1);
      if (page.length > MAX_PAGE_BYTES) {
        throw new IOException("page larger than " + MAX_PAGE_BYTES + " bytes");
      }
      return MetricsReader.read(kind, new String(page, StandardCharsets.UTF_8), pageSize);
    }
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, name + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    };
  }

  @Override
  public void close() {
    scheduler.shutdownNow();
    workers.shutdownNow();
  }
}
