package io.kvrouter.engines.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.testkit.MetricsServer;
import io.kvrouter.engines.testkit.Pages;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The scrape loop of several engines at once, with pages of the size real engines serve. */
class ScraperTest {

  /** Counts what one engine's scrapes gave. */
  private static final class Counting implements Scraper.Target {
    private final String url;
    final AtomicInteger scraped = new AtomicInteger();
    final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();

    Counting(String url) {
      this.url = url;
    }

    @Override
    public String metricsUrl() {
      return url;
    }

    @Override
    public EngineKind kind() {
      return EngineKind.VLLM;
    }

    @Override
    public Integer pageSize() {
      return null;
    }

    @Override
    public void scraped(EngineMetrics metrics) {
      scraped.incrementAndGet();
    }

    @Override
    public void scrapeFailed(String error) {
      failures.add(error);
    }
  }

  /**
   * More engines than the scraper has threads, each serving vLLM's real page (55 KB: its body arrives in several
   * pieces): every engine goes on being scraped. (Reading a body with a blocking read on the HTTP client's own
   * threads stalled every scrape of the node once two such bodies were in flight.)
   */
  @Test
  void engineScrapesOfFullSizedPagesAtOnceAllKeepGoing() throws Exception {
    String page = Pages.page("vllm-0.32.0-cpu.prom");
    assertThat(page.length()).isGreaterThan(50_000);
    List<MetricsServer> servers = new ArrayList<>();
    List<Counting> targets = new ArrayList<>();
    // a generous timeout: on a loaded host a scrape may take seconds, and what is checked is that none stalls
    try (Scraper scraper = new Scraper(Duration.ofMillis(5), Duration.ofSeconds(10))) {
      for (int i = 0; i < 4; i++) {
        MetricsServer server = new MetricsServer();
        server.page(page);
        servers.add(server);
        Counting target = new Counting(server.baseUrl() + "/metrics");
        targets.add(target);
        scraper.start(target);
      }
      await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(targets)
          .allSatisfy(t -> assertThat(t.scraped.get()).isGreaterThanOrEqualTo(20)));
    } finally {
      servers.forEach(MetricsServer::close);
    }
  }

  /** A page above the bound is a failed scrape naming the bound, and the engine is scraped again. */
  @Test
  void aPageAboveTheBoundIsAFailedScrape() throws Exception {
    try (MetricsServer server = new MetricsServer();
        Scraper scraper = new Scraper(Duration.ofMillis(5), Duration.ofSeconds(5))) {
      server.page("x".repeat(Scraper.MAX_PAGE_BYTES + 1));
      Counting target = new Counting(server.baseUrl() + "/metrics");
      scraper.start(target);
      await().atMost(Duration.ofSeconds(60)).until(() -> target.failures.size() >= 2);
      assertThat(target.failures).allSatisfy(f -> assertThat(f).contains("larger than"));
      assertThat(target.scraped.get()).isZero();
    }
  }
}
