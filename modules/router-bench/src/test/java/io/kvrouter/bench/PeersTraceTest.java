package io.kvrouter.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import org.junit.jupiter.api.Test;

/** bench peers' trace preparation for aiperf: partial last blocks get ids of their own, whole blocks keep theirs. */
class PeersTraceTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void aPartialLastBlockGetsAFreshIdAndWholeBlocksKeepTheirs() throws Exception {
    List<String> out = PeersBench.fullBlocksOnly(List.of(
        "{\"timestamp\": 0, \"input_length\": 1054, \"output_length\": 10, \"hash_ids\": [1, 2, 3]}",
        "{\"timestamp\": 5, \"input_length\": 1536, \"output_length\": 10, \"hash_ids\": [1, 2, 3]}",
        "", "{\"timestamp\": 9, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [7]}"), 512);
    assertThat(out).hasSize(3);
    assertThat(JSON.readTree(out.get(0)).get("hash_ids").toString()).isEqualTo("[1,2,8]");
    assertThat(JSON.readTree(out.get(1)).get("hash_ids").toString()).isEqualTo("[1,2,3]");
    assertThat(JSON.readTree(out.get(2)).get("hash_ids").toString()).isEqualTo("[9]");
    assertThat(JSON.readTree(out.get(1)).get("timestamp").asInt()).isEqualTo(5);
  }

  @Test
  void sumsASeriesOverItsLabelSets() {
    String page = "# HELP x\nvllm:prompt_tokens_total{engine=\"0\"} 10.0\nvllm:prompt_tokens_total{engine=\"1\"} 5.5\n"
        + "vllm:prompt_tokens_total_created 3\nvllm:other 7\n";
    assertThat(PeersBench.sum(page, "vllm:prompt_tokens_total")).isEqualTo(15.5);
  }
}
