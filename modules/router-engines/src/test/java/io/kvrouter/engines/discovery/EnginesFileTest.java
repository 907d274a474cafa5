package io.kvrouter.engines.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import org.junit.jupiter.api.Test;

class EnginesFileTest {

  @Test
  void theDocumentedShapeParsesWithItsDefaults() throws Exception {
    EnginesFile.Parsed parsed = EnginesFile.parse("""
        engines:
          - model: org/llama-8b
            worker_id: vllm-0
            kind: vllm
            base_url: http://127.0.0.1:8100
            metrics_url: http://127.0.0.1:8100/metrics
            kv_events: tcp://127.0.0.1:5557
            kv_events_replay: tcp://127.0.0.1:5567
            kv_events_topic: kv-events
            dp_size: 2
            block_size: 16
            total_kv_blocks: 28800
            max_num_batched_tokens: 4096
          - model: org/llama-8b
            worker_id: sglang-0
            kind: sglang
            base_url: http://127.0.0.1:8200/
        """);
    assertThat(parsed.problems()).isEmpty();
    assertThat(parsed.engines()).containsExactly(
        new EngineSpec("org/llama-8b", "vllm-0", EngineKind.VLLM, "http://127.0.0.1:8100",
            "http://127.0.0.1:8100/metrics", "tcp://127.0.0.1:5557", "tcp://127.0.0.1:5567", "kv-events", 2, 16,
            28800, 4096),
        new EngineSpec("org/llama-8b", "sglang-0", EngineKind.SGLANG, "http://127.0.0.1:8200",
            "http://127.0.0.1:8200/metrics", null, null, null, 1, null, null, 8192));
  }

  @Test
  void aRoleRegistersAPrefillOrDecodeWorkerAndAnUnknownOneIsAProblem() throws Exception {
    EnginesFile.Parsed parsed = EnginesFile.parse("""
        engines:
          - {model: m, worker_id: p, kind: vllm, base_url: "http://127.0.0.1:9", role: prefill}
          - {model: m, worker_id: d, kind: vllm, base_url: "http://127.0.0.1:10", role: decode}
          - {model: m, worker_id: a, kind: vllm, base_url: "http://127.0.0.1:11"}
          - {model: m, worker_id: x, kind: vllm, base_url: "http://127.0.0.1:12", role: both}
        """);
    assertThat(parsed.engines()).extracting(EngineSpec::role).containsExactly(
        io.kvrouter.core.model.WorkerRole.PREFILL, io.kvrouter.core.model.WorkerRole.DECODE,
        io.kvrouter.core.model.WorkerRole.AGGREGATED);
    assertThat(parsed.problems()).singleElement().asString().contains("(x)").contains("role: must be aggregated, "
        + "prefill or decode");
  }

  @Test
  void jsonIsAcceptedAsYaml() throws Exception {
    EnginesFile.Parsed parsed = EnginesFile.parse("{\"engines\": [{\"model\": \"m\", \"worker_id\": \"w\", "
        + "\"kind\": \"vllm\", \"base_url\": \"http://127.0.0.1:9\"}]}");
    assertThat(parsed.engines()).hasSize(1);
  }

  @Test
  void badEntriesAreLeftOutAndNamedTheOthersRun() throws Exception {
    EnginesFile.Parsed parsed = EnginesFile.parse("""
        engines:
          - {model: m, worker_id: ok, kind: vllm, base_url: "http://127.0.0.1:1"}
          - {model: m, worker_id: typo, kind: vllm, base_url: "http://127.0.0.1:1", blocksize: 16}
          - {model: m, worker_id: kind, kind: tgi, base_url: "http://127.0.0.1:1"}
          - {model: m, worker_id: zmq, kind: vllm, base_url: "http://127.0.0.1:1", kv_events: "tcp://*:5557"}
          - {model: m, worker_id: ok, kind: sglang, base_url: "http://127.0.0.1:2"}
          - {model: m, worker_id: size, kind: vllm, base_url: "http://127.0.0.1:1", dp_size: "two"}
          - {model: m, worker_id: nourl, kind: vllm}
        """);
    assertThat(parsed.engines()).extracting(EngineSpec::workerId).containsExactly("ok");
    assertThat(parsed.problems()).hasSize(6);
    assertThat(String.join("\n", parsed.problems())).contains("unknown key 'blocksize'", "'tgi'",
        "kv_events: must be tcp://host:port", "repeats an earlier entry", "dp_size: must be a whole number",
        "base_url");
  }

  @Test
  void aFileThatIsNotAMapIsUnreadable() {
    assertThatThrownBy(() -> EnginesFile.parse("- a\n- b\n"))
        .isInstanceOf(EnginesFile.UnreadableFileException.class);
    assertThatThrownBy(() -> EnginesFile.parse("engines: [unclosed"))
        .isInstanceOf(EnginesFile.UnreadableFileException.class);
  }
}
