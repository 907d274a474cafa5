package io.kvrouter.interop;

import static org.awaitility.Awaitility.await;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.sim.fleet.EnginesFile;
import io.kvrouter.sim.server.EngineConfig;
import io.kvrouter.sim.server.ModelPromptTokenizer;
import io.kvrouter.sim.server.SimEngineServer;
import io.kvrouter.tokenizer.ModelTokenizer;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Simulated vLLM engines (router-sim's engine server, in this JVM, tokenizing with models/kvrouter-tiny), their
 * engines file, and their registration with a router node as workers: until the engine connectors (router-engines)
 * read the engines file themselves, this fixture registers each entry of the file through the node's routing layer,
 * with the file's worker id, block size, KV blocks and base URL. Engines publish no KV events here: kv routing runs
 * on the approximate index the router's own Books feed.
 */
final class SimulatedFleet implements AutoCloseable {
  static final Path REPO = Path.of(System.getProperty("kvrouter.interop.root", "../..")).toAbsolutePath().normalize();
  static final Path TINY = REPO.resolve("models/kvrouter-tiny");

  final String model;
  final List<SimEngineServer> engines = new ArrayList<>();
  final List<EnginesFile.Entry> entries = new ArrayList<>();
  private final ModelTokenizer tokenizer;

  SimulatedFleet(String model) throws IOException {
    this.model = model;
    this.tokenizer = ModelTokenizer.load(TINY);
  }

  /** Starts an engine of {@code kvBlocks} blocks of 16 whose simulated time runs {@code timeScale} times faster. */
  SimEngineServer start(int kvBlocks, double timeScale) {
    EngineConfig base = EngineConfig.loopback(model, kvBlocks, 16, timeScale);
    EngineConfig config = new EngineConfig(base.model(), base.host(), 0, 1, kvBlocks, 16, base.maxModelLen(),
        base.limits(), base.timing(), timeScale, -1, -1, base.kvTopic(), base.encoding(), base.replayFormat(),
        base.seed(), base.eosMinTokens(), base.eosMaxTokens(), tokenizer.vocabularySize());
    SimEngineServer engine = SimEngineServer.start(config, new ModelPromptTokenizer(tokenizer));
    engines.add(engine);
    entries.add(new EnginesFile.Entry(model, "sim-" + (engines.size() - 1), "127.0.0.1", engine.httpPort(), -1, -1,
        config.kvTopic(), 1, 16, kvBlocks, config.limits().maxBatchedTokens()));
    return engine;
  }

  String workerId(SimEngineServer engine) {
    return entries.get(engines.indexOf(engine)).workerId();
  }

  /** Writes the engines file (what KVROUTER_ENGINES will name). */
  Path writeEnginesFile(Path file) throws IOException {
    EnginesFile.write(file, entries);
    return file;
  }

  /** Registers the engines file's entries (every engine started so far) as the model's workers. */
  void register(RouterCluster cluster) throws Exception {
    for (Map<String, Object> entry : EnginesFile.read(writeEnginesFile(java.nio.file.Files.createTempFile(
        "engines", ".yaml")))) {
      register(cluster, entry);
    }
  }

  /** Registers one engine of the fleet. */
  void register(RouterCluster cluster, SimEngineServer engine) throws Exception {
    register(cluster, engine, WorkerRole.AGGREGATED);
  }

  /**
   * Registers one engine of the fleet as a worker of {@code role} (the engines file has no role key: a prefill or
   * decode engine is registered here).
   */
  void register(RouterCluster cluster, SimEngineServer engine, WorkerRole role) throws Exception {
    EnginesFile.Entry e = entries.get(engines.indexOf(engine));
    register(cluster, Map.of("worker_id", e.workerId(), "base_url", e.baseUrl(), "block_size", e.blockSize(),
        "total_kv_blocks", e.totalKvBlocks(), "max_num_batched_tokens", e.maxNumBatchedTokens(), "dp_size",
        e.dpSize()), role);
  }

  private void register(RouterCluster cluster, Map<String, Object> entry) throws Exception {
    register(cluster, entry, WorkerRole.AGGREGATED);
  }

  private void register(RouterCluster cluster, Map<String, Object> entry, WorkerRole role) throws Exception {
    String worker = (String) entry.get("worker_id");
    WorkerConfig config = new WorkerConfig(worker, 0, ((Number) entry.get("dp_size")).intValue(),
        ((Number) entry.get("max_num_batched_tokens")).intValue(), ((Number) entry.get("total_kv_blocks")).intValue(),
        ((Number) entry.get("block_size")).intValue(), (String) entry.get("base_url"), cluster.region(), role);
    cluster.client(model).register(config, Duration.ofSeconds(10)).toCompletableFuture().get();
    await().atMost(Duration.ofSeconds(10)).until(() -> cluster.view(model) != null
        && cluster.view(model).worker(worker) != null);
  }

  @Override
  public void close() {
    for (SimEngineServer engine : engines) {
      try {
        engine.close();
      } catch (RuntimeException ignored) {
        // stopped already (a test killed it)
      }
    }
    tokenizer.close();
  }
}
