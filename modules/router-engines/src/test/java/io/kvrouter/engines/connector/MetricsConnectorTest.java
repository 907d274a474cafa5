package io.kvrouter.engines.connector;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.membership.RankReport;
import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import io.kvrouter.engines.metrics.Scraper;
import io.kvrouter.engines.testkit.Harness;
import io.kvrouter.engines.testkit.IndexSink;
import io.kvrouter.engines.testkit.MetricsServer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Load and capacity from a recorded vLLM /metrics page served on loopback: the worker registers with the engine's
 * own block size and KV blocks, every scrape reports its load (the heartbeat), a changed num_gpu_blocks is a new
 * engine, and failing metrics make the engine unavailable until they answer again.
 */
@Timeout(60)
class MetricsConnectorTest {

  @Test
  void registersWithTheEnginesCapacityReportsLoadAndFollowsItsChanges() throws Exception {
    String page = io.kvrouter.engines.testkit.Pages.page("vllm.prom");
    try (MetricsServer server = new MetricsServer(); IndexSink sink = new IndexSink(Harness.MODEL);
        Scraper scraper = new Scraper(Harness.SETTINGS.scrapeInterval(), Harness.SETTINGS.scrapeTimeout())) {
      server.page(page);
      EngineSpec spec = EngineSpec.of(Harness.MODEL, "vllm-m", EngineKind.VLLM, server.baseUrl(), null, null, null,
          null, 1, null, null, 4096);
      EngineConnector connector = new EngineConnector(spec, "n", "n", "test", sink, Harness.SETTINGS, Map.of(),
          System::currentTimeMillis, EngineConnector.BatchListener.NONE);
      connector.start();
      Scraper.Handle scrapes = scraper.start(connector.scrapeTarget());
      try {
        await().atMost(Harness.WAIT).until(() -> sink.worker("vllm-m") != null);
        assertThat(sink.worker("vllm-m").blockSize()).isEqualTo(16);
        assertThat(sink.worker("vllm-m").totalKvBlocks()).isEqualTo(28800);
        assertThat(sink.worker("vllm-m").maxNumBatchedTokens()).isEqualTo(4096);
        assertThat(sink.worker("vllm-m").endpoint()).isEqualTo(server.baseUrl());
        await().atMost(Harness.WAIT).until(() -> !sink.calls("report").isEmpty());
        assertThat(sink.calls("report").get(0).reports()).containsExactly(new RankReport(0, 7200, 0, 1));
        await().atMost(Harness.WAIT).until(() -> connector.status().available());

        // the engine came back with another KV cache size: Register would conflict, so it registers anew
        server.page(page.replace("num_gpu_blocks=\"28800\"", "num_gpu_blocks=\"30000\""));
        await().atMost(Harness.WAIT).until(() -> sink.worker("vllm-m") != null
            && sink.worker("vllm-m").totalKvBlocks() == 30000);
        assertThat(sink.calls("deregister")).hasSize(1);
        assertThat(connector.status().engineRestarts()).isEqualTo(1);
        await().atMost(Harness.WAIT).until(() -> lastReport(sink).equals(List.of(new RankReport(0, 7500, 0, 1))));

        // metrics fail: no more reports (so the router's heartbeat timeout makes the worker unavailable)
        server.fail(503);
        await().atMost(Harness.WAIT).until(() -> !connector.status().lastScrapeError().isEmpty());
        int reports = sink.calls("report").size();
        await().atMost(Harness.WAIT).until(() -> !connector.status().available());
        assertThat(sink.calls("report").size()).isLessThanOrEqualTo(reports + 1);
        assertThat(connector.status().lastScrapeError()).contains("503");
        assertThat(connector.status().scrapeErrors()).isPositive();

        server.page(page.replace("num_gpu_blocks=\"28800\"", "num_gpu_blocks=\"30000\""));
        await().atMost(Harness.WAIT).until(() -> connector.status().available()
            && sink.calls("report").size() > reports + 1);
        assertThat(connector.status().lastScrapeError()).isEmpty();
      } finally {
        scrapes.cancel();
        connector.close();
      }
    }
  }

  private static List<RankReport> lastReport(IndexSink sink) {
    var reports = sink.calls("report");
    return reports.isEmpty() ? List.of() : reports.get(reports.size() - 1).reports();
  }
}
