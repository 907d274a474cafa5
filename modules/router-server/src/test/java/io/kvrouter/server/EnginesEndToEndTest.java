package io.kvrouter.server;

import static io.kvrouter.engines.testkit.Tokens.run;
import static io.kvrouter.engines.testkit.Tokens.stored;
import static io.kvrouter.server.TestRouter.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.engines.testkit.MetricsServer;
import io.kvrouter.engines.testkit.Pages;
import io.kvrouter.engines.testkit.PythonPublisher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A router node started as bin/kvrouter starts it ({@code Main.init}) with {@code kvrouter.engines.file} naming two
 * engines (the independent Python publisher for their KV events, recorded vLLM pages for their metrics): they
 * register with their own capacity, and a Select of a prompt one of them cached goes to it, with no call to Workers;
 * the management state, {@code /engines} and {@code /metrics} show each engine's connector.
 */
@Timeout(120)
class EnginesEndToEndTest {
  static final String MODEL = "org/llama-8b";
  static final int BS = 16;

  @TempDir
  Path dir;

  @Test
  void enginesFromTheFileFeedTheRouterAndShowInManagement() throws Exception {
    try (PythonPublisher a = PythonPublisher.start("vllm-map", 1);
        PythonPublisher b = PythonPublisher.start("vllm-array", 1);
        MetricsServer metricsA = new MetricsServer(); MetricsServer metricsB = new MetricsServer()) {
      metricsA.page(Pages.page("vllm.prom"));
      metricsB.page(Pages.page("vllm.prom"));
      Path file = dir.resolve("engines.yaml");
      Files.writeString(file, """
          engines:
            - {model: %s, worker_id: engine-a, kind: vllm, base_url: "%s", kv_events: "%s",
               kv_events_replay: "%s", kv_events_topic: kv-events}
            - {model: %s, worker_id: engine-b, kind: vllm, base_url: "%s", kv_events: "%s",
               kv_events_replay: "%s", kv_events_topic: kv-events}
          """.formatted(MODEL, metricsA.baseUrl(), a.kvEvents(), a.kvEventsReplay(), MODEL, metricsB.baseUrl(),
          b.kvEvents(), b.kvEventsReplay()));
      try (TestRouter router = TestRouter.start("kvrouter.engines.file = \""
          + file.toString().replace("\\", "\\\\") + "\"\nkvrouter.engines.scrape-interval = 200ms\n"
          + "kvrouter.engines.status-interval = 200ms\n")) {
        await().atMost(Duration.ofSeconds(30)).until(() -> {
          var state = router.managementGet("/models/state?model=org%2Fllama-8b");
          return state.statusCode() == 200 && engines(state.body()).size() == 2
              && connected(engines(state.body()), 2);
        });
        assertThat(router.state(MODEL).getWorkersList()).extracting(w -> w.getConfig().getTotalKvBlocks())
            .containsOnly(28800);

        int[] prompt = run(11, 6 * BS);
        b.batch(stored(new Object[] {1L, 2L, 3L, 4L, 5L, 6L}, null, prompt, BS));
        RouteRequest.Builder request = RouteRequest.newBuilder().setModel(MODEL);
        for (int token : prompt) {
          request.addTokenIds(token);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> {
          Selection selection = join(router.router.select(request.build()));
          return selection.getWorker().getWorkerId().equals("engine-b") && selection.getOverlapBlocks() == 6;
        });

        var listing = JsonParser.parseString(router.managementGet("/engines").body()).getAsJsonObject();
        assertThat(listing.getAsJsonArray("engines")).hasSize(2);
        assertThat(listing.getAsJsonArray("listed")).hasSize(2);
        await().atMost(Duration.ofSeconds(10)).until(() -> {
          String metrics = router.managementGet("/metrics").body();
          return metrics.contains("kvrouter_engine_connected{model=\"org/llama-8b\",rank=\"0\",worker=\"engine-b\"} 1.0")
              && metrics.contains("kvrouter_engine_batches_total{model=\"org/llama-8b\",rank=\"0\",worker=\"engine-b\"} 1.0")
              && metrics.contains("kvrouter_engine_available{model=\"org/llama-8b\",worker=\"engine-a\"} 1.0");
        });
      }
    }
  }

  private static JsonArray engines(String stateJson) {
    JsonObject state = JsonParser.parseString(stateJson).getAsJsonObject();
    return state.has("engines") ? state.getAsJsonArray("engines") : new JsonArray();
  }

  private static boolean connected(JsonArray engines, int expected) {
    int connected = 0;
    for (var engine : engines) {
      var ranks = engine.getAsJsonObject().getAsJsonArray("ranks");
      if (engine.getAsJsonObject().get("phase").getAsString().equals("RUNNING") && ranks.size() == 1
          && ranks.get(0).getAsJsonObject().get("connected").getAsBoolean()) {
        connected++;
      }
    }
    return connected == expected;
  }
}
