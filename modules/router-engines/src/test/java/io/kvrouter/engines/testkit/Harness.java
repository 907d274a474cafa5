package io.kvrouter.engines.testkit;

import static org.awaitility.Awaitility.await;

import io.kvrouter.core.model.Rank;
import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import io.kvrouter.engines.connector.ConnectorSettings;
import io.kvrouter.engines.connector.EngineConnector;
import io.kvrouter.engines.connector.RankCheckpoint;
import io.kvrouter.engines.connector.RankStatus;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;

/**
 * A connector between the Python publisher and an {@link IndexSink}, with the engine's capacity from the spec (no
 * metrics): what most connector tests start from.
 */
public final class Harness implements AutoCloseable {
  public static final String MODEL = "org/llama-8b";
  public static final String WORKER = "vllm-0";
  public static final Duration WAIT = Duration.ofSeconds(20);

  /** The tests' timings; no catch-up replay (an hour), so the replays a test counts are its own. */
  public static final ConnectorSettings SETTINGS = catchingUpAfter(Duration.ofHours(1));

  /** {@link #SETTINGS} with an idle rank caught up after {@code idle}. */
  public static ConnectorSettings catchingUpAfter(Duration idle) {
    return new ConnectorSettings(Duration.ofMillis(200), Duration.ofMillis(500), Duration.ofMillis(1000), 3, idle,
        Duration.ofSeconds(2), Duration.ofSeconds(1), 10_000, 64L << 20, Duration.ofMillis(200), 20_000);
  }

  public final PythonPublisher publisher;
  public final IndexSink sink;
  public final int blockSize;
  public EngineConnector connector;

  private Harness(PythonPublisher publisher, IndexSink sink, int blockSize) {
    this.publisher = publisher;
    this.sink = sink;
    this.blockSize = blockSize;
  }

  public static Harness start(String encoding, int dpSize, int blockSize, int totalKvBlocks) throws IOException {
    Harness harness = publisherOnly(encoding, dpSize, blockSize);
    harness.connect(totalKvBlocks, Map.of());
    return harness;
  }

  /** The publisher and the sink, no connector yet (late attach, checkpoints). */
  public static Harness publisherOnly(String encoding, int dpSize, int blockSize) throws IOException {
    return new Harness(PythonPublisher.start(encoding, dpSize), new IndexSink(MODEL), blockSize);
  }

  public EngineSpec spec(int totalKvBlocks, int dpSize, boolean replay) {
    return EngineSpec.of(MODEL, WORKER, EngineKind.VLLM, "http://127.0.0.1:1", null, publisher.kvEvents(),
        replay ? publisher.kvEventsReplay() : null, "kv-events", dpSize, blockSize, totalKvBlocks, null);
  }

  public EngineConnector connect(int totalKvBlocks, Map<Integer, RankCheckpoint> checkpoints) {
    return connect(spec(totalKvBlocks, 1, true), checkpoints);
  }

  public EngineConnector connect(EngineSpec spec, Map<Integer, RankCheckpoint> checkpoints) {
    return connect(spec, checkpoints, SETTINGS);
  }

  public EngineConnector connect(EngineSpec spec, Map<Integer, RankCheckpoint> checkpoints,
      ConnectorSettings settings) {
    connector = new EngineConnector(spec, "test-node", "test-node", "test", sink, settings, checkpoints,
        System::currentTimeMillis, EngineConnector.BatchListener.NONE);
    connector.start();
    await().atMost(WAIT).until(() -> connector.phase() == EngineConnector.Phase.RUNNING
        && connector.status().ranks().stream().allMatch(RankStatus::connected));
    return connector;
  }

  public RankStatus rank(int rank) {
    return connector.status().rank(rank);
  }

  /** Waits until the connector has applied (or skipped) every batch up to {@code seq} on {@code rank}. */
  public void awaitSeq(int rank, long seq) {
    await().atMost(WAIT).until(() -> rank(rank).lastSeq() >= seq);
  }

  /** The device blocks rank 0 holds, from the root, of {@code tokens} as the router hashes a request. */
  public int held(int[] tokens) {
    return held(0, tokens);
  }

  public int held(int rank, int[] tokens) {
    return sink.index().overlap(new Rank(WORKER, rank), Tokens.routed(tokens, blockSize), System.currentTimeMillis())
        .device();
  }

  /** Waits until the index shows {@code blocks} of {@code tokens} held (held events age through the window). */
  public void awaitHeld(int[] tokens, int blocks) {
    await().atMost(WAIT).until(() -> held(tokens) == blocks);
  }

  @Override
  public void close() {
    if (connector != null) {
      connector.close();
    }
    publisher.close();
    sink.close();
  }
}
