package io.kvrouter.engines.connector;

import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import io.kvrouter.engines.config.TcpEndpoint;
import io.kvrouter.engines.events.EngineEvent;
import io.kvrouter.engines.events.KvBatchDecoder;
import io.kvrouter.engines.events.RankTranslator;
import io.kvrouter.engines.events.RecordBatcher;
import io.kvrouter.engines.events.TranslationCounters;
import io.kvrouter.engines.metrics.EngineMetrics;
import io.kvrouter.engines.metrics.Scraper;
import io.kvrouter.engines.zmq.RankSockets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import net.openhft.hashing.LongHashFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * One engine's connector: registers the engine as a worker with its own block size and KV blocks, reports its load
 * from every scrape of its metrics (the worker's heartbeat), and feeds its KV events from ZMQ into the router's index.
 * It runs one thread (ZMQ sockets belong to one thread); scrapes complete on the scraper's threads and hand their
 * figures over.
 *
 * <h2>Sequence numbers and router event ids</h2>
 * The engine numbers its batches per rank ({@code seq}, from 0 at every start); the router's index numbers a
 * (worker, rank)'s events and clears the rank on a jump ({@code KvIndex}, {@code KvEventSequencer}). The connector
 * handles the engine's numbers itself and gives every event it passes on the rank's next router event id, so the
 * router's ids stay consecutive and its gap detection keeps meaning what it means for any publisher (a batch the
 * region's fan-out lost):
 * <ul>
 *   <li>a live batch with the next seq is applied; one already applied (the live copy of a replayed batch) is
 *       dropped;</li>
 *   <li>a gap is asked of the rank's replay socket, from the last applied seq: the first answer must be that batch
 *       with the same payload digest (else the engine restarted: see below), then the missing batches are applied;
 *       what the replay cannot cover (its buffer moved past, no answer, no replay endpoint) is handled by clearing
 *       the rank: an {@code AllBlocksCleared} with the next id, counted;</li>
 *   <li>a seq that goes backwards on the live stream, a replay whose batch under the last applied seq differs, or a
 *       capacity ({@code num_gpu_blocks}, block size) other than the registered one is a new engine: every rank is
 *       cleared, the worker deregistered and registered again, and the rank replayed from its first batch;</li>
 *   <li>a connector that starts with a rank's {@link RankCheckpoint} (it took over from a node that died) replays from
 *       the checkpoint's seq with the checkpoint's ids, so the batches the previous connector already applied get
 *       the same ids and the index ignores them; if it cannot verify the checkpoint it jumps its ids by 2^32 and
 *       clears (the index declares that jump a gap, clears the rank on every node, counts it) and replays from the
 *       oldest batch held. Without a checkpoint it starts from ids above any a previous connector can have used
 *       (the clock's millis × 2^20), clears and replays from the oldest batch held.</li>
 * </ul>
 */
public final class EngineConnector implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EngineConnector.class);
  private static final LongHashFunction DIGEST = LongHashFunction.xx3(0);
  /** Added to a checkpoint's next id when it cannot be continued: above any id the previous connector used since. */
  static final long ID_JUMP = 1L << 32;
  private static final int POLL_MILLIS = 50;
  private static final int DRAIN_PER_POLL = 1024;

  /** Hears the connector's status every status interval, from the connector's own thread. */
  public interface StatusListener {
    StatusListener NONE = status -> { };

    void status(EngineStatus status);
  }

  /** Told of every applied batch (status keeps the last lag; benchmarks record them all). */
  public interface BatchListener {
    BatchListener NONE = (rank, seq, engineTs, blocks) -> { };

    void applied(int rank, long seq, double engineTsSeconds, int blocks);
  }

  public enum Phase {
    AWAITING_CAPACITY,
    REGISTERING,
    RUNNING,
    STOPPED
  }

  /** How a rank's stream is (re)joined: from a checkpoint, attaching without one, or after a new engine. */
  private enum Sync {
    CHECKPOINT,
    ATTACH,
    FRESH,
    NONE
  }

  private final EngineSpec spec;
  private final EngineSink sink;
  private final ConnectorSettings settings;
  private final LongSupplier clock;
  private final BatchListener listener;
  private final long incarnation;
  private final String node;
  private volatile String configFrom;
  private volatile String configOrigin;
  private volatile List<String> configConflicts = List.of();
  private final Map<Integer, RankCheckpoint> checkpoints;
  private final Rank[] ranks;
  private final KvBatchDecoder decoder = new KvBatchDecoder();
  private final RecordBatcher batcher = new RecordBatcher();
  private final List<KvEvent> translated = new ArrayList<>();
  private final AtomicReference<EngineMetrics> pendingMetrics = new AtomicReference<>();
  private final Thread thread;
  private volatile boolean running = true;
  private volatile Phase phase = Phase.AWAITING_CAPACITY;
  private volatile WorkerConfig registered;
  private volatile EngineMetrics lastMetrics;
  private volatile long lastScrapeMillis;
  private volatile long lastScrapeOkMillis;
  private volatile String lastScrapeError = "";
  private volatile long scrapes;
  private volatile long scrapeErrors;
  private volatile long reportErrors;
  private volatile long engineRestarts;
  private volatile String lastError = "";
  private ZContext context;
  private ZMQ.Poller poller;
  private volatile StatusListener statusListener = StatusListener.NONE;
  private volatile long statusIntervalMillis = Long.MAX_VALUE;
  private long lastStatusMillis;

  /** One rank's stream state; written by the connector thread only. */
  private final class Rank {
    final int rank;
    RankSockets sockets;
    volatile RankTranslator translator;
    volatile long lastSeq = -1;
    long lastLiveSeq = -1;
    volatile long lastDigest;
    volatile long nextId;
    Sync sync;
    RankSockets.Message pending;
    final long[] malformed = new long[1];
    volatile long gaps;
    volatile long replays;
    volatile long replayFailures;
    volatile long replayRetries;
    volatile long caughtUpBatches;
    /** When the rank last got a live batch or a replay answered (clock millis): an idle rank is caught up after. */
    long heardAtMillis;
    volatile long clears;
    volatile long duplicates;
    volatile long batches;
    volatile long events;
    volatile long lagMillis = -1;
    volatile long maxLagMillis = -1;
    volatile long publishErrors;
    volatile long attachedFromSeq = -1;
    /** Every batch before the next live one is known to have been seen (a replay from the start ended). */
    boolean startKnown;
    /** lastSeq, lastDigest and nextId as one consistent value (a status must never mix two batches' figures). */
    volatile RankCheckpoint checkpoint;

    Rank(int rank) {
      this.rank = rank;
    }

    long nextId() {
      return nextId++;
    }
  }

  /**
   * @param checkpoints ranks' checkpoints from the connector this one replaces (empty: none)
   * @param clock epoch millis (statuses, lag, the first ids)
   */
  public EngineConnector(EngineSpec spec, String node, String configFrom, String configOrigin, EngineSink sink,
      ConnectorSettings settings, Map<Integer, RankCheckpoint> checkpoints, LongSupplier clock,
      BatchListener listener) {
    this.spec = spec;
    this.node = node;
    this.configFrom = configFrom;
    this.configOrigin = configOrigin;
    this.sink = sink;
    this.settings = settings;
    this.checkpoints = Map.copyOf(checkpoints);
    this.clock = clock;
    this.listener = listener;
    this.incarnation = clock.getAsLong();
    this.ranks = new Rank[spec.dpSize()];
    for (int r = 0; r < ranks.length; r++) {
      ranks[r] = new Rank(r);
    }
    this.thread = new Thread(this::run, "kvrouter-engine-" + spec.workerId());
    thread.setDaemon(true);
  }

  public EngineSpec spec() {
    return spec;
  }

  public void start() {
    thread.start();
  }

  /**
   * Publishes the status every {@code interval} from the connector's thread (so a busy node's actors never delay
   * the checkpoints a successor starts from); call before {@link #start()}.
   */
  public void publishStatus(Duration interval, StatusListener listener) {
    this.statusIntervalMillis = interval.toMillis();
    this.statusListener = listener;
  }

  private void maybePublishStatus() {
    long now = clock.getAsLong();
    if (now - lastStatusMillis >= statusIntervalMillis) {
      lastStatusMillis = now;
      statusListener.status(status());
    }
  }

  /** Where the configuration in use came from, and which nodes' sources differ (shown in the status). */
  public void configSource(String from, String origin, List<String> conflicts) {
    this.configFrom = from;
    this.configOrigin = origin;
    this.configConflicts = List.copyOf(conflicts);
  }

  // ---------------------------------------------------------------- scrapes (scraper threads)

  /** A scrape answered: the figures go to the connector thread; the load is reported at once. */
  public void scraped(EngineMetrics metrics) {
    long now = clock.getAsLong();
    scrapes++;
    lastScrapeMillis = now;
    lastScrapeOkMillis = now;
    lastScrapeError = "";
    lastMetrics = metrics;
    pendingMetrics.set(metrics);
    WorkerConfig worker = registered;
    if (worker == null || !matches(capacity(metrics), worker)) {
      return;
    }
    var reports = metrics.reports(spec.dpSize(), worker.totalKvBlocks());
    if (reports.isEmpty()) {
      return;
    }
    sink.reportLoad(spec.model(), spec.workerId(), reports, settings.callTimeout()).whenComplete((done, failure) -> {
      if (failure != null) {
        reportErrors++;
      }
    });
  }

  /** A scrape failed (unreachable, timeout, a page that does not parse); no load is reported. */
  public void scrapeFailed(String error) {
    scrapes++;
    scrapeErrors++;
    lastScrapeMillis = clock.getAsLong();
    lastScrapeError = error;
  }

  /** What a {@link Scraper} scrapes for this connector: its engine's metrics page, answered to this connector. */
  public Scraper.Target scrapeTarget() {
    return new ScrapeTarget(this);
  }

  private record ScrapeTarget(EngineConnector connector) implements Scraper.Target {
    @Override
    public String metricsUrl() {
      return connector.spec.metricsUrl();
    }

    @Override
    public EngineKind kind() {
      return connector.spec.kind();
    }

    @Override
    public Integer pageSize() {
      return connector.spec.blockSize();
    }

    @Override
    public void scraped(EngineMetrics metrics) {
      connector.scraped(metrics);
    }

    @Override
    public void scrapeFailed(String error) {
      connector.scrapeFailed(error);
    }
  }

  // ---------------------------------------------------------------- the connector thread

  private void run() {
    try {
      while (running) {
        WorkerConfig config = awaitCapacity();
        if (config == null) {
          break;
        }
        if (!register(config)) {
          pause(settings.retryInterval().toMillis());
          continue;
        }
        if (spec.kvEvents() != null && context == null) {
          openSockets();
        }
        phase = Phase.RUNNING;
        while (running && registered == config) {
          EngineMetrics metrics = pendingMetrics.getAndSet(null);
          if (metrics != null && !matches(capacity(metrics), config)) {
            newEngine("capacity " + describe(capacity(metrics)) + " differs from the registered "
                + config.blockSize() + "/" + config.totalKvBlocks());
            break;
          }
          if (context == null) {
            pause(POLL_MILLIS);
            continue;
          }
          for (Rank rank : ranks) {
            if (rank.sync != Sync.NONE && registered == config) {
              sync(rank);
            }
          }
          if (registered == config) {
            pollOnce();
          }
        }
      }
    } catch (RuntimeException | Error e) {
      lastError = e.toString();
      log.error("engine connector {} stopped by an error", spec.key(), e);
    } finally {
      closeSockets();
      phase = Phase.STOPPED;
    }
  }

  /** The worker this engine registers as, once its block size and KV blocks are known; null when stopped. */
  private WorkerConfig awaitCapacity() {
    while (running) {
      int[] capacity = capacity(lastMetrics);
      if (capacity[0] > 0 && capacity[1] > 0) {
        return new WorkerConfig(spec.workerId(), 0, spec.dpSize(), spec.maxNumBatchedTokens(), capacity[1],
            capacity[0], spec.baseUrl(), "", spec.role());
      }
      phase = Phase.AWAITING_CAPACITY;
      pause(POLL_MILLIS);
    }
    return null;
  }

  /**
   * {block size, KV blocks} as the engine's metrics give them, else as the engines file does (0: unknown). The
   * engine's own figures win: they are what it runs with.
   */
  private int[] capacity(EngineMetrics metrics) {
    Integer blockSize = metrics != null && metrics.blockSize() != null ? metrics.blockSize() : spec.blockSize();
    if (blockSize == null && spec.kind() == EngineKind.SGLANG) {
      blockSize = 1;  // SGLang's --page-size default
    }
    Integer blocks = metrics != null && metrics.totalKvBlocks() != null ? metrics.totalKvBlocks()
        : spec.totalKvBlocks();
    return new int[] {blockSize == null ? 0 : blockSize, blocks == null ? 0 : blocks};
  }

  private static boolean matches(int[] capacity, WorkerConfig worker) {
    return (capacity[0] == 0 || capacity[0] == worker.blockSize())
        && (capacity[1] == 0 || capacity[1] == worker.totalKvBlocks());
  }

  private static String describe(int[] capacity) {
    return capacity[0] + "/" + capacity[1];
  }

  private boolean register(WorkerConfig config) {
    phase = Phase.REGISTERING;
    try {
      await(sink.register(spec.model(), config, settings.callTimeout()));
    } catch (RoutingException e) {
      if (!RoutingError.WORKER_CONFIG_CONFLICT.equals(e.error().reason())) {
        lastError = "register: " + e.getMessage();
        return false;
      }
      // registered before with another capacity: a previous incarnation of the engine
      log.info("engine {} was registered with another capacity: registering it again", spec.key());
      try {
        await(sink.deregister(spec.model(), spec.workerId(), settings.callTimeout()));
        await(sink.register(spec.model(), config, settings.callTimeout()));
      } catch (RuntimeException again) {
        lastError = "register: " + again.getMessage();
        return false;
      }
    } catch (RuntimeException e) {
      lastError = "register: " + e.getMessage();
      return false;
    }
    int maxBlocks = (int) Math.min(Integer.MAX_VALUE, (long) config.totalKvBlocks() * sink.blocksPerKvBlock());
    for (Rank rank : ranks) {
      RankTranslator previous = rank.translator;
      if (previous == null || previous.capacity() != maxBlocks || registered == null) {
        rank.translator = new RankTranslator(config.blockSize(), maxBlocks);
      }
      if (rank.sync == null) {
        rank.sync = checkpoints.containsKey(rank.rank) ? Sync.CHECKPOINT : Sync.ATTACH;
      }
    }
    registered = config;
    lastError = "";
    return true;
  }

  private void openSockets() {
    context = new ZContext(1);
    TcpEndpoint events = TcpEndpoint.parse(spec.kvEvents());
    TcpEndpoint replay = spec.kvEventsReplay() == null ? null : TcpEndpoint.parse(spec.kvEventsReplay());
    poller = context.createPoller(2 * ranks.length);
    for (Rank rank : ranks) {
      rank.sockets = new RankSockets(context, rank.rank, events.forRank(rank.rank),
          replay == null ? null : replay.forRank(rank.rank), spec.kvEventsTopic(), settings.receiveHighWaterMark(),
          settings.maxMessageBytes());
      poller.register(rank.sockets.sub(), ZMQ.Poller.POLLIN);
      poller.register(rank.sockets.monitor(), ZMQ.Poller.POLLIN);
    }
  }

  private void closeSockets() {
    if (context == null) {
      return;
    }
    for (Rank rank : ranks) {
      if (rank.sockets != null) {
        rank.sockets.close();
        rank.sockets = null;
      }
    }
    if (poller != null) {
      poller.close();
    }
    context.close();
    context = null;
  }

  private void pollOnce() {
    maybePublishStatus();
    poller.poll(POLL_MILLIS);
    for (Rank rank : ranks) {
      rank.sockets.readMonitor();
      for (int i = 0; i < DRAIN_PER_POLL && registered != null && running; i++) {
        RankSockets.Message message = rank.sockets.receive(rank.malformed);
        if (message == null) {
          break;
        }
        if (message.payload() != null) {
          live(rank, message);
        }
      }
      if (registered != null && running && rank.sync == Sync.NONE && rank.sockets.hasReplay()
          && clock.getAsLong() - rank.heardAtMillis >= settings.catchUpAfter().toMillis()) {
        catchUp(rank);
      }
    }
  }

  // ---------------------------------------------------------------- the stream of one rank

  private void live(Rank rank, RankSockets.Message message) {
    long seq = message.seq();
    rank.heardAtMillis = clock.getAsLong();
    if (rank.lastLiveSeq >= 0 && seq <= rank.lastLiveSeq) {
      rank.pending = message;
      newEngine("rank " + rank.rank + "'s sequence went back from " + rank.lastLiveSeq + " to " + seq);
      return;
    }
    rank.lastLiveSeq = seq;
    if (rank.lastSeq >= 0 && seq <= rank.lastSeq) {
      rank.duplicates++;
      return;
    }
    boolean gap = rank.lastSeq >= 0 ? seq > rank.lastSeq + 1 : rank.startKnown && seq > 0;
    if (gap) {
      rank.gaps++;
      if (!recover(rank, seq)) {
        return;
      }
      if (rank.lastSeq >= 0 && seq <= rank.lastSeq) {
        rank.duplicates++;
        return;
      }
      if (seq > rank.lastSeq + 1) {
        // the replay did not reach this batch's predecessor: what is missing cannot be had
        clearRank(rank);
      }
    }
    apply(rank, seq, message.payload());
  }

  /**
   * Fills a live gap from the replay socket, verifying the last applied batch first (when there is one); returns
   * false when that showed a new engine (the caller stops handling the message).
   */
  private boolean recover(Rank rank, long liveSeq) {
    return recover(rank, liveSeq, false);
  }

  /**
   * A rank that heard nothing for {@code catch-up-after} asks the replay for the batches after its last one: the SUB
   * socket drops what arrives before its subscription takes effect and what overflows its queue, and a batch lost at
   * the end of a burst is otherwise seen only when the next one arrives (an idle engine: never). Usually the answer
   * is the last batch alone (its digest checked: another there is a new engine); what follows it is applied and
   * counted in {@code caughtUpBatches}.
   */
  private void catchUp(Rank rank) {
    recover(rank, Long.MAX_VALUE, true);
  }

  private boolean recover(Rank rank, long liveSeq, boolean catchUp) {
    boolean verify = rank.lastSeq >= 0;
    long from = Math.max(rank.lastSeq, 0);
    long expectedFirst = rank.lastSeq + 1;
    long digest = rank.lastDigest;
    boolean[] first = {true};
    boolean[] restarted = {false};
    RankSockets.ReplayEnd end = replay(rank, from,
        (seq, payload) -> {
          if (first[0]) {
            first[0] = false;
            if (verify && seq == from) {
              if (DIGEST.hashBytes(payload) != digest) {
                restarted[0] = true;
                return false;
              }
              return seq < liveSeq - 1;
            }
            if (seq > expectedFirst) {
              clearRank(rank);
            }
          }
          if (rank.lastSeq < 0 || seq > rank.lastSeq) {
            if (catchUp) {
              // counted before the index sees the batch, so a reader that sees it there sees the count too
              rank.caughtUpBatches++;
            }
            apply(rank, seq, payload);
          }
          return running && seq < liveSeq - 1;
        });
    if (catchUp) {
      rank.heardAtMillis = clock.getAsLong();
      rank.replayRetries = rank.sockets.unansweredRequests();
      if (end == RankSockets.ReplayEnd.FAILED) {
        rank.replayFailures++;
      }
    } else {
      countReplay(rank, end);
    }
    if (restarted[0] || (verify && end == RankSockets.ReplayEnd.ENDED && first[0])) {
      rank.pending = null;
      newEngine("rank " + rank.rank + "'s replay holds another batch under sequence " + from);
      return false;
    }
    return true;
  }

  /** Joins a rank's stream after a registration: from a checkpoint, by attaching, or from a new engine's start. */
  private void sync(Rank rank) {
    Sync mode = rank.sync;
    rank.sync = Sync.NONE;
    switch (mode) {
      case CHECKPOINT -> syncFromCheckpoint(rank, checkpoints.get(rank.rank));
      case ATTACH -> {
        rank.nextId = Math.max(rank.nextId, clock.getAsLong() << 20);
        emitCleared(rank);
        replayFromStart(rank);
      }
      case FRESH -> replayFromStart(rank);
      default -> { }
    }
    RankSockets.Message pending = rank.pending;
    rank.pending = null;
    if (pending != null && registered != null && (rank.lastSeq < 0 || pending.seq() > rank.lastSeq)) {
      live(rank, pending);
    }
  }

  /**
   * Continues a rank from a previous connector's checkpoint. The replay is read from the engine's oldest batch: the
   * batches up to the checkpoint only teach this connector which blocks the rank holds (a child's tokens hash chains
   * from its parent's, and the previous connector's memory of them died with it), the checkpoint's batch is checked
   * by its digest, and the batches after it are applied with the checkpoint's event ids.
   */
  private void syncFromCheckpoint(Rank rank, RankCheckpoint checkpoint) {
    rank.lastSeq = checkpoint.lastSeq();
    rank.lastDigest = checkpoint.lastDigest();
    rank.nextId = checkpoint.nextEventId();
    if (checkpoint.lastSeq() < 0) {
      replayFromStart(rank);
      return;
    }
    long at = checkpoint.lastSeq();
    boolean[] first = {true};
    boolean[] verified = {false};
    boolean[] restarted = {false};
    RankSockets.ReplayEnd end = replay(rank, 0,
        (seq, payload) -> {
          if (first[0]) {
            first[0] = false;
            rank.attachedFromSeq = seq;
            if (seq > at) {
              jump(rank);
            }
          }
          if (seq < at) {
            learn(rank, payload);
            return running;
          }
          if (seq == at) {
            restarted[0] = DIGEST.hashBytes(payload) != checkpoint.lastDigest();
            verified[0] = !restarted[0];
            if (verified[0]) {
              learn(rank, payload);
            }
            return verified[0];
          }
          if (rank.lastSeq < 0 || seq > rank.lastSeq) {
            apply(rank, seq, payload);
          }
          return running;
        });
    countReplay(rank, end);
    if (restarted[0] || (end == RankSockets.ReplayEnd.ENDED && !verified[0] && rank.lastSeq == at)) {
      newEngine("rank " + rank.rank + "'s checkpoint at sequence " + at + " is not in the engine's replay");
    } else if (end == RankSockets.ReplayEnd.FAILED && !verified[0] && rank.lastSeq == at) {
      jump(rank);
    } else {
      rank.startKnown = rank.lastSeq >= 0;
    }
  }

  /** Reads a batch the index already has, only to learn the blocks it stored (nothing is published). */
  private void learn(Rank rank, byte[] payload) {
    KvBatchDecoder.Batch batch;
    try {
      batch = decoder.decode(payload);
    } catch (KvBatchDecoder.MalformedBatchException e) {
      return;
    }
    Rank target = batch.dpRank() < 0 ? rank : batch.dpRank() < ranks.length ? ranks[batch.dpRank()] : null;
    if (target == null) {
      return;
    }
    for (EngineEvent event : batch.events()) {
      target.translator.learn(event);
    }
  }

  /** Replays every batch the engine still holds (from sequence 0 on), recording where the history started. */
  private void replayFromStart(Rank rank) {
    rank.lastSeq = -1;
    rank.lastLiveSeq = -1;
    boolean[] first = {true};
    RankSockets.ReplayEnd end = replay(rank, 0,
        (seq, payload) -> {
          if (first[0]) {
            first[0] = false;
            rank.attachedFromSeq = seq;
          }
          if (rank.lastSeq < 0 || seq > rank.lastSeq) {
            apply(rank, seq, payload);
          }
          return running;
        });
    if (rank.sockets.hasReplay()) {
      countReplay(rank, end);
    }
    rank.startKnown = end != RankSockets.ReplayEnd.FAILED;
  }

  private void countReplay(Rank rank, RankSockets.ReplayEnd end) {
    rank.heardAtMillis = clock.getAsLong();
    rank.replayRetries = rank.sockets.unansweredRequests();
    if (end == RankSockets.ReplayEnd.FAILED) {
      rank.replayFailures++;
    } else {
      rank.replays++;
    }
  }

  /** The rank's view is lost (a gap nobody can fill): the index and the connector forget it. */
  private void clearRank(Rank rank) {
    rank.clears++;
    emitCleared(rank);
  }

  /** A checkpoint that cannot be continued: ids jump past anything the previous connector used, and the rank clears. */
  private void jump(Rank rank) {
    rank.startKnown = false;
    rank.nextId += ID_JUMP;
    rank.clears++;
    emitCleared(rank);
    rank.lastSeq = -1;
    rank.lastLiveSeq = -1;
    mark(rank);
  }

  private void emitCleared(Rank rank) {
    rank.translator.reset();
    publish(rank, List.of(new KvEventRecord(rank.nextId(), KvEventRecord.Kind.CLEARED, StorageTier.DEVICE, null,
        null, null)));
    mark(rank);
  }

  /**
   * A new engine on the same worker id: every rank clears, the worker is deregistered (its bookings went with the
   * old engine) and registered again with the capacity now scraped, and every rank is replayed from its start.
   */
  private void newEngine(String reason) {
    log.info("engine {}: a new engine ({}): clearing, deregistering and registering it again", spec.key(), reason);
    engineRestarts++;
    for (Rank rank : ranks) {
      rank.clears++;
      emitCleared(rank);
      rank.lastSeq = -1;
      rank.lastLiveSeq = -1;
      rank.sync = Sync.FRESH;
    }
    registered = null;
    try {
      await(sink.deregister(spec.model(), spec.workerId(), settings.callTimeout()));
    } catch (RuntimeException e) {
      lastError = "deregister: " + e.getMessage();
    }
  }

  /** Applies one engine batch of {@code rank}'s socket: decoded, translated, cut to the limits, published. */
  private void apply(Rank rank, long seq, byte[] payload) {
    long digest = DIGEST.hashBytes(payload);
    KvBatchDecoder.Batch batch;
    try {
      batch = decoder.decode(payload);
    } catch (KvBatchDecoder.MalformedBatchException e) {
      rank.malformed[0]++;
      advance(rank, seq, digest);
      return;
    }
    Rank target = batch.dpRank() < 0 ? rank : batch.dpRank() < ranks.length ? ranks[batch.dpRank()] : null;
    if (target == null) {
      rank.malformed[0]++;
      advance(rank, seq, digest);
      return;
    }
    translated.clear();
    int blocks = 0;
    for (EngineEvent event : batch.events()) {
      target.translator.translate(event, translated);
    }
    for (KvEvent event : translated) {
      if (event instanceof KvEvent.Stored stored) {
        blocks += stored.blockHashes().length;
      }
    }
    // counted before the index and the sequence move, so a reader that sees either sees the counts too
    target.batches++;
    target.events += batch.events().size();
    if (Double.isFinite(batch.ts())) {
      long lag = Math.max(0, clock.getAsLong() - Math.round(batch.ts() * 1000));
      target.lagMillis = lag;
      target.maxLagMillis = Math.max(target.maxLagMillis, lag);
    }
    for (List<KvEventRecord> records : batcher.batches(translated, target::nextId)) {
      publish(target, records);
    }
    advance(rank, seq, digest);
    if (target != rank) {
      mark(target);
    }
    listener.applied(target.rank, seq, batch.ts(), blocks);
  }

  private void advance(Rank rank, long seq, long digest) {
    rank.lastSeq = seq;
    rank.lastDigest = digest;
    mark(rank);
  }

  private static void mark(Rank rank) {
    rank.checkpoint = new RankCheckpoint(rank.rank, rank.lastSeq, rank.lastDigest, rank.nextId);
  }

  private void publish(Rank rank, List<KvEventRecord> records) {
    if (registered == null) {
      return;
    }
    try {
      sink.publish(spec.model(), spec.workerId(), rank.rank, records);
    } catch (RoutingException e) {
      rank.publishErrors++;
      if (e.error().code() == RoutingError.Code.NOT_FOUND && registered != null) {
        // deregistered by someone else: register again and rejoin every rank from the engine's oldest batch
        log.info("engine {} is no longer registered ({}): registering it again", spec.key(), e.getMessage());
        registered = null;
        for (Rank each : ranks) {
          each.sync = Sync.FRESH;
          each.translator.reset();
        }
      }
    }
  }

  /** A replay of {@code rank} from {@code fromSeq} with the configured timeout, attempts and batch bound. */
  private RankSockets.ReplayEnd replay(Rank rank, long fromSeq, RankSockets.ReplayConsumer consumer) {
    int timeoutMillis = (int) Math.min(Integer.MAX_VALUE, settings.replayTimeout().toMillis());
    return rank.sockets.replay(fromSeq, timeoutMillis, settings.replayAttempts(), settings.maxReplayBatches(), consumer);
  }

  private void pause(long millis) {
    maybePublishStatus();
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running = false;
    }
  }

  private <T> T await(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(settings.callTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      while (cause instanceof java.util.concurrent.CompletionException && cause.getCause() != null) {
        cause = cause.getCause();
      }
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw new IllegalStateException(cause);
    } catch (TimeoutException e) {
      throw new IllegalStateException("no answer within " + settings.callTimeout());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running = false;
      throw new IllegalStateException("interrupted");
    }
  }

  // ---------------------------------------------------------------- status and stop

  public Phase phase() {
    return phase;
  }

  public WorkerConfig registered() {
    return registered;
  }

  public long incarnation() {
    return incarnation;
  }

  public String lastError() {
    return lastError;
  }

  public long reportErrors() {
    return reportErrors;
  }

  public EngineStatus status() {
    long now = clock.getAsLong();
    List<RankStatus> rankStatuses = new ArrayList<>(ranks.length);
    for (Rank rank : ranks) {
      RankTranslator translator = rank.translator;
      rankStatuses.add(new RankStatus(rank.rank, rank.sockets != null && rank.sockets.connected(), rank.lastSeq,
          rank.gaps, rank.replays, rank.replayFailures, rank.replayRetries, rank.caughtUpBatches, rank.clears,
          rank.duplicates, rank.malformed[0], rank.batches, rank.events, rank.lagMillis, rank.maxLagMillis, rank.publishErrors,
          translator == null ? 0 : translator.heldBlocks(),
          translator == null ? TranslationCounters.NONE : translator.counters(),
          rank.checkpoint == null ? new RankCheckpoint(rank.rank, -1, 0, rank.nextId) : rank.checkpoint,
          rank.attachedFromSeq));
    }
    WorkerConfig worker = registered;
    boolean available = lastScrapeOkMillis > 0
        && now - lastScrapeOkMillis <= settings.heartbeatTimeout().toMillis();
    return new EngineStatus(spec.model(), spec.workerId(), spec.kind().configName(), node, incarnation, configFrom,
        configOrigin, configConflicts, phase.name(), worker != null, worker == null ? 0 : worker.blockSize(),
        worker == null ? 0 : worker.totalKvBlocks(), spec.dpSize(), spec.kvEvents() != null, available,
        lastScrapeMillis, lastScrapeOkMillis, lastScrapeError, scrapes, scrapeErrors, engineRestarts, lastError,
        rankStatuses, now);
  }

  /** Stops the thread (closing its sockets); the worker stays registered (the connector moves, or stops). */
  @Override
  public void close() {
    running = false;
    try {
      thread.join(Duration.ofSeconds(10).toMillis() + settings.replayTimeout().toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops, then deregisters the worker: the engine is gone from every source. */
  public void retire() {
    close();
    try {
      await(sink.deregister(spec.model(), spec.workerId(), settings.callTimeout()));
    } catch (RuntimeException e) {
      log.info("engine {}: deregistering it failed: {}", spec.key(), e.getMessage());
    }
  }
}
