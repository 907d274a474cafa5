package io.kvrouter.engines.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.membership.RankReport;
import io.kvrouter.engines.config.EngineKind;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The recorded pages (src/test/resources/metrics, written by record_metrics_pages.py with prometheus_client from the
 * engines' own metric definitions) read into capacity and per-rank load.
 */
class MetricsReaderTest {

  static String page(String name) {
    return io.kvrouter.engines.testkit.Pages.page(name);
  }

  @Test
  void vllmPageGivesCapacityFromCacheConfigInfoAndTheRanksLoad() throws Exception {
    EngineMetrics metrics = MetricsReader.read(EngineKind.VLLM, page("vllm.prom"), null);
    assertThat(metrics.blockSize()).isEqualTo(16);
    assertThat(metrics.totalKvBlocks()).isEqualTo(28800);
    assertThat(metrics.ranks()).hasSize(1);
    EngineMetrics.RankMetrics rank = metrics.rank(0);
    assertThat(rank.running()).isEqualTo(3);
    assertThat(rank.waiting()).isEqualTo(1);
    assertThat(rank.kvUsage()).isEqualTo(0.25);
    assertThat(rank.prefixQueriedTokens()).isEqualTo(10_000);
    assertThat(rank.prefixHitTokens()).isEqualTo(4_000);
    assertThat(metrics.reports(1, 28800)).containsExactly(new RankReport(0, 7200, 0, 1));
  }

  /** A page vLLM 0.32.0 (its CPU build, serving kvrouter-tiny with block size 32) served, as it served it. */
  @Test
  void aPageVllmItselfServedIsRead() throws Exception {
    EngineMetrics metrics = MetricsReader.read(EngineKind.VLLM, page("vllm-0.32.0-cpu.prom"), null);
    assertThat(metrics.blockSize()).isEqualTo(32);
    assertThat(metrics.totalKvBlocks()).isEqualTo(65536);
    EngineMetrics.RankMetrics rank = metrics.rank(0);
    assertThat(rank.running()).isZero();
    assertThat(rank.waiting()).isZero();
    assertThat(rank.prefixQueriedTokens()).isEqualTo(280.0);
    assertThat(rank.prefixHitTokens()).isEqualTo(128.0);
  }

  @Test
  void vllmDataParallelRanksComeFromTheEngineLabel() throws Exception {
    EngineMetrics metrics = MetricsReader.read(EngineKind.VLLM, page("vllm-dp2.prom"), null);
    assertThat(metrics.blockSize()).isEqualTo(32);
    assertThat(metrics.totalKvBlocks()).isEqualTo(9000);
    assertThat(metrics.reports(2, 9000)).containsExactly(new RankReport(0, 2250, 0, 1),
        new RankReport(1, 4500, 0, 3));
  }

  @Test
  void vllmLoraGaugeGivesEveryRankTheLatestSeriesRunningAndWaitingAdapters() throws Exception {
    EngineMetrics metrics = MetricsReader.read(EngineKind.VLLM, page("vllm-lora.prom"), null);
    // the newer of the two series (by value: its update time); the gauge names no engine: it holds for every rank
    assertThat(metrics.rank(0).loraAdapters()).containsExactlyInAnyOrder("sql", "summarize", "chat");
    assertThat(metrics.rank(1).loraAdapters()).containsExactlyInAnyOrder("sql", "summarize", "chat");
    assertThat(metrics.reports(2, 1000)).allSatisfy(report -> assertThat(report.loraAdapters())
        .containsExactlyInAnyOrder("sql", "summarize", "chat"));
    assertThat(MetricsReader.read(EngineKind.VLLM, page("vllm.prom"), null).rank(0).loraAdapters())
        .as("no LoRA gauge: no adapters").isEmpty();
  }

  @Test
  void olderVllmNamesAreRead() throws Exception {
    EngineMetrics metrics = MetricsReader.read(EngineKind.VLLM, page("vllm-legacy.prom"), null);
    assertThat(metrics.totalKvBlocks()).isEqualTo(1000);
    assertThat(metrics.rank(0).kvUsage()).isEqualTo(0.25);
    assertThat(metrics.rank(0).prefixHitTokens()).isEqualTo(4_000);
  }

  @Test
  void sglangPageGivesBlocksFromTokensAndThePageSizeAndTheLowestTpRank() throws Exception {
    EngineMetrics metrics = MetricsReader.read(EngineKind.SGLANG, page("sglang.prom"), 16);
    assertThat(metrics.blockSize()).isNull();
    assertThat(metrics.totalKvBlocks()).isEqualTo(400_000 / 16);
    assertThat(metrics.ranks()).extracting(EngineMetrics.RankMetrics::rank).containsExactly(0, 1);
    assertThat(metrics.rank(0).running()).isEqualTo(2);
    assertThat(metrics.rank(1).waiting()).isEqualTo(5);
    assertThat(metrics.reports(2, 25_000)).containsExactly(new RankReport(0, 12_500, 0, 4),
        new RankReport(1, 6_250, 0, 5));
    assertThat(MetricsReader.read(EngineKind.SGLANG, page("sglang.prom"), null).totalKvBlocks())
        .isEqualTo(400_000);
  }

  @Test
  void aPageThatIsNotTheTextFormatIsRefusedWithItsLine() {
    assertThatThrownBy(() -> PrometheusText.parse("# HELP x\nvllm:num_requests_running{engine=\"0\" 3\n",
        Set.of("vllm:num_requests_running"))).isInstanceOf(PrometheusText.MalformedPageException.class)
        .hasMessageContaining("line 2");
    assertThatThrownBy(() -> PrometheusText.parse("vllm:num_requests_running{engine=\"0\"} three\n",
        Set.of("vllm:num_requests_running"))).hasMessageContaining("value");
  }

  @Test
  void labelValuesAreUnescapedAndUnwantedSeriesSkipped() throws Exception {
    List<PrometheusText.Sample> samples = PrometheusText.parse(
        "other_metric{a=\"b\"} 1\nwanted{name=\"a\\\"b\\\\c\\nd\",x=\"1\"} 2.5 1700000000000\nwanted NaN\n",
        Set.of("wanted"));
    assertThat(samples).hasSize(2);
    assertThat(samples.get(0).labels()).containsEntry("name", "a\"b\\c\nd").containsEntry("x", "1");
    assertThat(samples.get(0).value()).isEqualTo(2.5);
    assertThat(samples.get(1).value()).isNaN();
  }
}
