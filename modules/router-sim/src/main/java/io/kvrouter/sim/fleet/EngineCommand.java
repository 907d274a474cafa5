package io.kvrouter.sim.fleet;

import io.kvrouter.sim.engine.EngineRank;
import io.kvrouter.sim.engine.TimingModel;
import io.kvrouter.sim.server.EngineConfig;
import io.kvrouter.sim.server.ModelPromptTokenizer;
import io.kvrouter.sim.server.PromptTokenizer;
import io.kvrouter.sim.server.SimEngineServer;
import io.kvrouter.sim.server.TokenIdsOnlyTokenizer;
import io.kvrouter.tokenizer.ModelTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code bin/sim engine}: one simulated vLLM engine in this process, until SIGTERM (module README). */
@Command(name = "engine", mixinStandardHelpOptions = true,
    description = "One simulated vLLM engine: OpenAI-compatible HTTP and /metrics on --port, KV events over ZMQ.")
public final class EngineCommand implements Callable<Integer> {
  /** The line a started engine prints on stdout once it serves (bin/sim engines reads it). */
  public static final String READY = "SIM-ENGINE-READY";

  @Option(names = "--model", description = "served model name, default ${DEFAULT-VALUE}")
  String model = EngineConfig.DEFAULT_MODEL;

  @Option(names = "--host", description = "loopback address every socket binds, default ${DEFAULT-VALUE}")
  String host = "127.0.0.1";

  @Option(names = "--port", description = "HTTP port (0: a free one), default ${DEFAULT-VALUE} as vLLM's")
  int port = 8000;

  @Option(names = {"--data-parallel-size", "--dp-size"}, description = "ranks, default ${DEFAULT-VALUE}")
  int dpSize = 1;

  @Option(names = "--kv-blocks", description = "KV blocks per rank, default ${DEFAULT-VALUE}")
  int kvBlocks = 28_800;

  @Option(names = "--block-size", description = "tokens per block, default ${DEFAULT-VALUE}")
  int blockSize = 16;

  @Option(names = "--max-model-len", description = "longest prompt plus output (default: what a rank holds, at "
      + "most 131,072)")
  Integer maxModelLen;

  @Option(names = "--max-num-batched-tokens", description = "tokens per step, default ${DEFAULT-VALUE}")
  int maxBatchedTokens = 8_192;

  @Option(names = "--max-num-seqs", description = "running sequences per rank, default ${DEFAULT-VALUE}")
  int maxRunning = 256;

  @Option(names = "--time-scale", description = "simulated time runs this many times faster than real time, "
      + "default ${DEFAULT-VALUE}")
  double timeScale = 1.0;

  @Option(names = "--kv-events-port", description = "ZMQ PUB port of rank 0 (rank r: + r; 0: free ports; -1: no "
      + "events), default ${DEFAULT-VALUE}")
  int kvEventsPort = 5557;

  @Option(names = "--kv-replay-port", description = "ZMQ replay (ROUTER) port of rank 0 (rank r: + r; 0: free "
      + "ports; -1: no replay), default ${DEFAULT-VALUE}")
  int kvReplayPort = 5558;

  @Option(names = "--kv-events-topic", description = "topic frame of every batch, default ${DEFAULT-VALUE}")
  String topic = "kv-events";

  @Option(names = "--kv-events-encoding", description = "map (vLLM 0.33) | array (before vllm#42892), default "
      + "${DEFAULT-VALUE}")
  String encoding = "map";

  @Option(names = "--kv-replay-format", description = "topic (vLLM 0.33: [topic, seq, payload]) | legacy "
      + "([seq, payload]), default ${DEFAULT-VALUE}")
  String replayFormat = "topic";

  @Option(names = "--seed", description = "output tokens are drawn from (seed, prompt), default ${DEFAULT-VALUE}")
  long seed = 42;

  @Option(names = "--eos-after", paramLabel = "MIN-MAX", description = "without ignore_eos an output stops after a "
      + "length drawn from this range (unless max_tokens ends it), default ${DEFAULT-VALUE}")
  String eosAfter = "16-256";

  @Option(names = "--tokenizer", paramLabel = "DIR", description = "the model's HuggingFace tokenizer directory "
      + "(tokenizer.json, the chat template in tokenizer_config.json): text prompts and chat; default the "
      + "repository's models/kvrouter-tiny; 'none': token-id prompts only")
  String tokenizer;

  @Option(names = "--vocab-size", description = "without a tokenizer, output ids are drawn below this, default "
      + "${DEFAULT-VALUE}")
  int vocabularySize = TokenIdsOnlyTokenizer.DEFAULT_VOCABULARY;

  @Option(names = "--parent-pid", description = "exit when this process does (bin/sim engines sets it)")
  Long parentPid;

  /** The tokenizer directory asked for (or the repository's tiny model's), or null for none. */
  Path tokenizerDir() {
    if ("none".equals(tokenizer)) {
      return null;
    }
    if (tokenizer != null) {
      return Path.of(tokenizer);
    }
    String home = System.getProperty("sim.home");
    Path tiny = home == null ? null : Path.of(home).resolve("../../models/kvrouter-tiny").normalize();
    return tiny != null && Files.isDirectory(tiny) ? tiny : null;
  }

  EngineConfig config(int vocabulary) {
    String[] range = eosAfter.split("-", 2);
    if (range.length != 2) {
      throw new IllegalArgumentException("--eos-after wants MIN-MAX, got '" + eosAfter + "'");
    }
    EngineRank.Limits limits = new EngineRank.Limits(maxBatchedTokens, maxRunning, Math.max(1, kvBlocks / 100));
    int maxLen = maxModelLen != null ? maxModelLen : EngineConfig.defaultMaxModelLen(kvBlocks, blockSize);
    return new EngineConfig(model, host, port, dpSize, kvBlocks, blockSize, maxLen, limits,
        TimingModel.llama8bOnH100(), timeScale, kvEventsPort, kvReplayPort, topic,
        EngineConfig.KvEventEncoding.valueOf(encoding.toUpperCase(Locale.ROOT)),
        EngineConfig.ReplayFormat.valueOf(replayFormat.toUpperCase(Locale.ROOT)), seed,
        Integer.parseInt(range[0].trim()), Integer.parseInt(range[1].trim()), vocabulary);
  }

  @Override
  public Integer call() throws InterruptedException, IOException {
    Path dir = tokenizerDir();
    ModelTokenizer model = dir == null ? null : ModelTokenizer.load(dir);
    PromptTokenizer prompts = model == null ? new TokenIdsOnlyTokenizer(vocabularySize)
        : new ModelPromptTokenizer(model);
    SimEngineServer server = SimEngineServer.start(config(prompts.vocabularySize()), prompts);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      if (model != null) {
        model.close();
      }
      stopped.countDown();
    }, "sim-engine-shutdown"));
    if (parentPid != null) {
      ProcessHandle.of(parentPid).ifPresentOrElse(
          parent -> parent.onExit().thenRun(() -> System.exit(0)),
          () -> System.exit(0));
    }
    System.out.printf(Locale.ROOT, "%s {\"http_port\": %d, \"kv_events_port\": %d, \"kv_replay_port\": %d}%n", READY,
        server.httpPort(), server.kvEventsPort(), server.kvReplayPort());
    System.out.flush();
    stopped.await();
    return 0;
  }
}
