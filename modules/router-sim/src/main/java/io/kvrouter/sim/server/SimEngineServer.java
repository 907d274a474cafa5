package io.kvrouter.sim.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.sim.engine.SimRequest;
import io.kvrouter.sim.workload.Tokens;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A simulated vLLM engine as a server: router-sim's engine ranks on the wall clock ({@link RankEngine}), vLLM's
 * OpenAI-compatible HTTP API and /metrics on one port ({@link EngineHttpServer}), and, per rank, vLLM's KV events
 * over ZMQ ({@link ZmqKvEventPublisher}: rank r on the configured ports + r). Module README: "The engine server".
 */
public final class SimEngineServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SimEngineServer.class);

  private final EngineConfig config;
  private final PromptTokenizer tokenizer;
  private final EngineMetrics metrics;
  private final List<ZmqKvEventPublisher> publishers = new ArrayList<>();
  private final List<RankEngine> ranks = new ArrayList<>();
  private final ActorSystem<Void> system;
  private final ServerBinding binding;
  private final long createdSeconds = System.currentTimeMillis() / 1000;
  private final KvTransfers transfers = new KvTransfers();

  private SimEngineServer(EngineConfig config, PromptTokenizer tokenizer) {
    this.config = config;
    this.tokenizer = tokenizer;
    this.metrics = new EngineMetrics(config);
    try {
      int[] pubPorts = ports(config.kvEventsPort(), config.dpSize());
      int[] replayPorts = ports(config.kvReplayPort(), config.dpSize());
      for (int rank = 0; rank < config.dpSize(); rank++) {
        ZmqKvEventPublisher publisher = config.kvEventsPort() < 0 ? null
            : new ZmqKvEventPublisher(config.host(), pubPorts[rank], config.kvReplayPort() < 0 ? -1
                : replayPorts[rank], config.kvTopic(), rank, config.encoding(), config.replayFormat());
        if (publisher != null) {
          publishers.add(publisher);
        }
        ranks.add(new RankEngine(rank, config, metrics, publisher));
      }
      system = ActorSystem.create(Behaviors.empty(), "sim-engine", ConfigFactory.parseString("""
          pekko.actor.provider = local
          pekko.loglevel = WARNING
          pekko.http.server.request-timeout = infinite
          pekko.http.server.idle-timeout = 600 s
          pekko.http.server.parsing.max-content-length = 64m
          pekko.http.server.server-header = ""
          pekko.coordinated-shutdown.exit-jvm = off
          """).withFallback(ConfigFactory.defaultReference()));
      EngineHttpServer http = new EngineHttpServer(this, system);
      binding = Http.get(system).newServerAt(config.host(), config.httpPort()).bind(http::handle)
          .toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      closeEngines();
      throw new IllegalStateException("cannot start the engine: " + e.getMessage(), e);
    }
  }

  /**
   * Ports of each rank: {@code base + r} (vLLM's rule); for base 0, consecutive free ports found by trying, since the
   * engines file names rank 0's port only.
   */
  private static int[] ports(int base, int ranks) {
    int[] ports = new int[ranks];
    if (base < 0) {
      return ports;
    }
    if (base > 0 || ranks == 1) {
      for (int r = 0; r < ranks; r++) {
        ports[r] = base == 0 ? 0 : base + r;
      }
      return ports;
    }
    int start = FreePorts.consecutive(ranks);
    for (int r = 0; r < ranks; r++) {
      ports[r] = start + r;
    }
    return ports;
  }

  public static SimEngineServer start(EngineConfig config, PromptTokenizer tokenizer) {
    SimEngineServer server = new SimEngineServer(config, tokenizer);
    log.info("engine {} serving http://{}:{} ({} rank(s), KV events {})", config.model(), config.host(),
        server.httpPort(), config.dpSize(), server.kvEventsPort() < 0 ? "off"
            : "tcp://" + config.host() + ":" + server.kvEventsPort());
    return server;
  }

  public EngineConfig config() {
    return config;
  }

  PromptTokenizer tokenizer() {
    return tokenizer;
  }

  EngineMetrics metrics() {
    return metrics;
  }

  long createdSeconds() {
    return createdSeconds;
  }

  public int httpPort() {
    return binding.localAddress().getPort();
  }

  /** Rank 0's KV event PUB port, -1 without events. */
  public int kvEventsPort() {
    return publishers.isEmpty() ? -1 : publishers.get(0).pubPort();
  }

  /** Rank 0's replay port, -1 without replay. */
  public int kvReplayPort() {
    return publishers.isEmpty() ? -1 : publishers.get(0).replayPort();
  }

  /** The jobs of one HTTP request, submitted to a rank. */
  record Submitted(ResponseCollector collector, List<RankEngine.Job> jobs, RankEngine rank, int samples) {
    void abort() {
      for (RankEngine.Job job : jobs) {
        rank.abort(job.request().id());
      }
    }
  }

  /**
   * Validates lengths as vLLM does and submits every (prompt, sample) as one sequence to one rank: the one the
   * {@code X-data-parallel-rank} header names, else the least loaded.
   */
  Submitted submit(GenerationRequest request, Integer pinnedRank) {
    return submit(request, pinnedRank, null);
  }

  /** vLLM's P/D KV transfers of this engine (a prefill's held blocks; a decode's pulls). */
  public KvTransfers transfers() {
    return transfers;
  }

  /**
   * As {@link #submit(GenerationRequest, Integer)}, the prompt's leading blocks {@code received} from a prefill
   * engine (null: none): they must be this prompt's blocks (else 400), and are not prefilled here.
   */
  Submitted submit(GenerationRequest request, Integer pinnedRank, KvTransfers.Received received) {
    int samples = request.n();
    List<int[]> prompts = request.prompts();
    int[] promptLengths = new int[prompts.size() * samples];
    for (int p = 0; p < prompts.size(); p++) {
      int length = prompts.get(p).length;
      if (length >= config.maxModelLen()) {
        throw ApiException.validation("This model's maximum context length is " + config.maxModelLen()
            + " tokens. However, your prompt contains " + length + " input tokens, which exceeds this limit even "
            + "without any output tokens. Please reduce the length of the input prompt.", "input_tokens", length);
      }
      for (int s = 0; s < samples; s++) {
        promptLengths[p * samples + s] = length;
      }
    }
    if (request.maxTokens() != null && request.maxTokens() > config.maxModelLen()) {
      String param = "max_tokens";
      throw ApiException.validation(param + "=" + request.maxTokens() + " cannot be greater than max_model_len="
          + config.maxModelLen() + ". Please request fewer output tokens.", param, request.maxTokens());
    }
    RankEngine rank = chooseRank(pinnedRank);
    ResponseCollector collector = new ResponseCollector(promptLengths.length, promptLengths);
    String base = request.requestId() != null ? request.requestId() : UUID.randomUUID().toString();
    long arrival = System.nanoTime();
    List<RankEngine.Job> jobs = new ArrayList<>();
    for (int p = 0; p < prompts.size(); p++) {
      int[] prompt = prompts.get(p);
      int budget = config.maxModelLen() - prompt.length;
      int maxTokens = request.maxTokens() == null ? budget : Math.min(request.maxTokens(), budget);
      for (int s = 0; s < samples; s++) {
        long key = Tokens.key(config.seed(), promptHash(prompt), s);
        int output;
        String reason;
        int natural = config.eosMinTokens() + (int) Long.remainderUnsigned(key, config.eosMaxTokens()
            - config.eosMinTokens() + 1L);
        natural = Math.max(natural, request.minTokens());
        if (request.ignoreEos() || natural >= maxTokens) {
          output = maxTokens;
          reason = "length";
        } else {
          output = natural;
          reason = "stop";
        }
        int[] generated = Tokens.generate(key, output, tokenizer.vocabularySize());
        int[] sequence = new int[prompt.length + output];
        System.arraycopy(prompt, 0, sequence, 0, prompt.length);
        System.arraycopy(generated, 0, sequence, prompt.length, output);
        SimRequest sim = SimRequest.of(base + "-" + p + "-" + s, 0, sequence, prompt.length, config.blockSize());
        int transferred = 0;
        if (received != null && p == 0) {
          long[] own = sim.blockHashes();
          long[] got = received.blockHashes();
          if (got.length > own.length || !java.util.Arrays.equals(got, java.util.Arrays.copyOf(own, got.length))) {
            throw KvTransfers.unresolved("the transferred blocks are not this prompt's");
          }
          transferred = received.tokens();
        }
        jobs.add(new RankEngine.Job(sim, collector, p * samples + s, arrival, reason, transferred));
      }
    }
    for (RankEngine.Job job : jobs) {
      rank.submit(job);
    }
    return new Submitted(collector, jobs, rank, samples);
  }

  private RankEngine chooseRank(Integer pinned) {
    if (pinned != null) {
      if (pinned < 0 || pinned >= ranks.size()) {
        throw ApiException.validation("data parallel rank " + pinned + " is out of range [0, " + ranks.size() + ")",
            "X-data-parallel-rank", pinned);
      }
      return ranks.get(pinned);
    }
    RankEngine best = ranks.get(0);
    for (RankEngine rank : ranks) {
      if (rank.load() < best.load()) {
        best = rank;
      }
    }
    return best;
  }

  /** A 64-bit FNV-1a of the prompt ids: output tokens depend on the prompt, not on arrival order. */
  private static long promptHash(int[] prompt) {
    long h = 0xcbf29ce484222325L;
    for (int id : prompt) {
      h = (h ^ id) * 0x100000001b3L;
    }
    return h;
  }

  /** vLLM's /reset_prefix_cache: every rank, each refusing while it runs requests. */
  CompletionStage<Boolean> resetPrefixCache() {
    List<CompletableFuture<Boolean>> results = ranks.stream().map(RankEngine::resetPrefixCache).toList();
    return CompletableFuture.allOf(results.toArray(CompletableFuture[]::new))
        .thenApply(v -> results.stream().allMatch(CompletableFuture::join));
  }

  /** vLLM's ModelList for /v1/models. */
  ObjectNode models() {
    ObjectNode list = JsonSupport.MAPPER.createObjectNode();
    list.put("object", "list");
    ArrayNode data = list.putArray("data");
    ObjectNode card = data.addObject();
    card.put("id", config.model());
    card.put("object", "model");
    card.put("created", createdSeconds);
    card.put("owned_by", "vllm");
    card.put("root", config.model());
    card.putNull("parent");
    card.put("max_model_len", config.maxModelLen());
    ObjectNode permission = card.putArray("permission").addObject();
    permission.put("id", "modelperm-" + UUID.randomUUID().toString().replace("-", ""));
    permission.put("object", "model_permission");
    permission.put("created", createdSeconds);
    permission.put("allow_create_engine", false);
    permission.put("allow_sampling", true);
    permission.put("allow_logprobs", true);
    permission.put("allow_search_indices", false);
    permission.put("allow_view", true);
    permission.put("allow_fine_tuning", false);
    permission.put("organization", "*");
    permission.putNull("group");
    permission.put("is_blocking", false);
    return list;
  }

  private void closeEngines() {
    ranks.forEach(RankEngine::close);
    publishers.forEach(ZmqKvEventPublisher::close);
  }

  @Override
  public void close() {
    try {
      binding.terminate(Duration.ofSeconds(2)).toCompletableFuture().get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      log.warn("engine HTTP server did not stop cleanly: {}", e.toString());
    }
    system.terminate();
    closeEngines();
    try {
      system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      log.warn("engine actor system did not stop within 10 s");
    }
  }
}
