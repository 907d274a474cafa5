package io.kvrouter.engines.metrics;

import io.kvrouter.engines.config.EngineKind;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Scrapes engines' {@code /metrics} pages, each every interval (the next scrape of an engine is scheduled when the
 * previous one ended, so a slow engine never has two in flight). One per node: a scheduler thread and a small pool
 * for the HTTP client and the parsing. A body is read by the client as it arrives (never by a blocking read on the
 * client's own threads: with pages that arrive in pieces, two such reads in flight stalled every scrape), up to
 * {@link #MAX_PAGE_BYTES}, and the whole exchange ends at the timeout.
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
    return read(http.send(request(url), BODY), kind, pageSize);
  }

  /** The page's bytes, read as they arrive; over the bound the exchange fails; a non-200 answer's body is dropped. */
  private static final HttpResponse.BodyHandler<byte[]> BODY = info -> info.statusCode() == 200
      ? new BoundedBody(MAX_PAGE_BYTES) : HttpResponse.BodySubscribers.replacing(null);

  /** A body's bytes, up to a bound: past it the exchange is cancelled and its body fails. */
  private static final class BoundedBody implements HttpResponse.BodySubscriber<byte[]> {
    private final HttpResponse.BodySubscriber<byte[]> bytes = HttpResponse.BodySubscribers.ofByteArray();
    private final long bound;
    private Flow.Subscription subscription;
    private long received;
    private boolean over;

    BoundedBody(long bound) {
      this.bound = bound;
    }

    @Override
    public CompletionStage<byte[]> getBody() {
      return bytes.getBody();
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      this.subscription = subscription;
      bytes.onSubscribe(subscription);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
      if (over) {
        return;
      }
      for (ByteBuffer item : items) {
        received += item.remaining();
      }
      if (received > bound) {
        over = true;
        subscription.cancel();
        bytes.onError(new IOException("page larger than " + bound + " bytes"));
        return;
      }
      bytes.onNext(items);
    }

    @Override
    public void onError(Throwable error) {
      if (!over) {
        bytes.onError(error);
      }
    }

    @Override
    public void onComplete() {
      if (!over) {
        bytes.onComplete();
      }
    }
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
      CompletableFuture<HttpResponse<byte[]>> exchange = http.sendAsync(request, BODY);
      // the request's timeout covers the answer's headers only: this one covers the body too
      exchange.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS).whenCompleteAsync((response, failure) -> {
        try {
          if (cancelled) {
            return;
          }
          if (failure != null) {
            exchange.cancel(true);
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

  private static EngineMetrics read(HttpResponse<byte[]> response, EngineKind kind, Integer pageSize)
      throws IOException, PrometheusText.MalformedPageException {
    if (response.statusCode() != 200) {
      throw new IOException("HTTP " + response.statusCode());
    }
    return MetricsReader.read(kind, new String(response.body(), StandardCharsets.UTF_8), pageSize);
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
