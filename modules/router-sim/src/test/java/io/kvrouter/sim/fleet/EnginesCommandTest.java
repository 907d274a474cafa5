package io.kvrouter.sim.fleet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** bin/sim engines as a process: N engine processes, healthy, in an engines file; all gone when it is stopped. */
class EnginesCommandTest {
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private static int health(String baseUrl) {
    try {
      return HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl + "/health")).timeout(Duration.ofSeconds(2))
          .build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  @Test
  void startsHealthyEnginesWritesTheEnginesFileAndStopsEveryEngineOnSigterm(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("engines.yaml");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process sim = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
        "io.kvrouter.sim.SimCli", "engines", "--count", "2", "--base-port", "0", "--kv-blocks", "1000",
        "--time-scale", "10", "--heap", "192m", "--engines-file", file.toString())
        .redirectErrorStream(true).redirectOutput(dir.resolve("sim.log").toFile()).start();
    try {
      await().atMost(Duration.ofSeconds(120)).until(() -> Files.exists(file) || !sim.isAlive());
      assertThat(sim.isAlive()).as(Files.readString(dir.resolve("sim.log"))).isTrue();
      List<Map<String, Object>> engines = EnginesFile.read(file);
      assertThat(engines).hasSize(2);
      for (int i = 0; i < 2; i++) {
        Map<String, Object> engine = engines.get(i);
        assertThat(engine.keySet()).containsExactly("model", "worker_id", "kind", "base_url", "metrics_url",
            "kv_events", "kv_events_replay", "kv_events_topic", "dp_size", "block_size", "total_kv_blocks",
            "max_num_batched_tokens");
        assertThat(engine).containsEntry("model", "org/llama-8b").containsEntry("worker_id", "sim-" + i)
            .containsEntry("kind", "vllm").containsEntry("kv_events_topic", "kv-events").containsEntry("dp_size", 1)
            .containsEntry("block_size", 16).containsEntry("total_kv_blocks", 1000)
            .containsEntry("max_num_batched_tokens", 8192);
        String base = (String) engine.get("base_url");
        assertThat(base).startsWith("http://127.0.0.1:");
        assertThat(engine.get("metrics_url")).isEqualTo(base + "/metrics");
        assertThat((String) engine.get("kv_events")).startsWith("tcp://127.0.0.1:");
        assertThat(health(base)).isEqualTo(200);
      }
      assertThat(engines.get(0).get("base_url")).isNotEqualTo(engines.get(1).get("base_url"));

      sim.destroy(); // SIGTERM
      await().atMost(Duration.ofSeconds(30)).until(() -> !sim.isAlive());
      for (Map<String, Object> engine : engines) {
        await().atMost(Duration.ofSeconds(30)).until(() -> health((String) engine.get("base_url")) == -1);
      }
    } finally {
      sim.destroyForcibly();
    }
  }
}
