package io.kvrouter.bench;

import io.kvrouter.cluster.kvevents.KvEventRecord;
import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.engines.cluster.ClusterEngineSink;
import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import io.kvrouter.engines.connector.ConnectorSettings;
import io.kvrouter.engines.connector.EngineConnector;
import io.kvrouter.engines.connector.EngineSink;
import io.kvrouter.engines.events.EngineEvent;
import io.kvrouter.engines.events.KvBatchDecoder;
import io.kvrouter.engines.events.RankTranslator;
import io.kvrouter.engines.events.RecordBatcher;
import io.kvrouter.engines.metrics.MetricsReader;
import io.kvrouter.engines.metrics.Scraper;
import io.kvrouter.engines.testkit.MetricsServer;
import io.kvrouter.engines.testkit.Pages;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * router-engines' costs, in one run on a real one-node cluster (the connector publishes through router-cluster's
 * fan-out into the node's index, as in production):
 *
 * <ul>
 *   <li><b>Throughput.</b> A Java PUB socket sends vLLM-format batches (map encoding: 32 BlockStored events of 8
 *       blocks each, 256 new blocks, plus a BlockRemoved of the 256 blocks stored 8 batches before, so the index
 *       stays at a steady size) as fast as one connector takes them (at most 512 batches ahead); blocks/s stored into
 *       the index. Beside it, the same payloads through each stage alone, on this thread: decode; decode and
 *       translate (tokens hashes); decode, translate, cut and publish into the fan-out (the connector without ZMQ).</li>
 *   <li><b>Lag.</b> The publisher paced at 10,000 blocks/s (a batch of one 16-block chain every 1.6 ms, its
 *       {@code ts} the send time), engine publish → index applied per batch (the connector's own clock reading of
 *       the batch's {@code ts}, microseconds).</li>
 *   <li><b>Scrape cost.</b> Reading the recorded vLLM pages (parse only) and a whole scrape (HTTP GET on loopback from
 *       the JDK server, read and parse) per engine: wall time and CPU time per scrape.</li>
 * </ul>
 */
final class EnginesBench {
  static final String MODEL = "bench/engines";
  static final int BS = 16;

  private EnginesBench() {}

  static List<Path> run(Path out, boolean quick) throws Exception {
    Report report = new Report("Engines: KV events from ZMQ into the index, lag, scrape cost");
    report.paragraph("One connector (router-engines' `EngineConnector`) on a one-node cluster, publishing through "
        + "router-cluster's `KvEventFanout` into the node's index; the engine is a JeroMQ PUB socket in this JVM "
        + "sending vLLM's map-encoded batches (payloads encoded ahead with msgpack-java). Targets: >= 200k blocks/s "
        + "per connector, publish -> index p99 <= 10 ms at 10k blocks/s.");
    try (BenchCluster cluster = BenchCluster.start("engines-bench", false)) {
      ClusterEngineSink sink = new ClusterEngineSink(cluster.routing, 4);
      // lag first, on a clean heap: the throughput run's garbage would pause it
      System.gc();
      lag(report, sink, quick);
      throughput(report, sink, quick);
    }
    scrapes(report, quick);
    return List.of(report.write(out, "engines.md"));
  }

  // ---------------------------------------------------------------- throughput

  private static void throughput(Report report, EngineSink sink, boolean quick) throws Exception {
    int batches = quick ? 200 : 6000;
    int events = 32;
    int blocksPerEvent = 8;
    List<byte[]> payloads = new ArrayList<>(batches);
    for (int b = 0; b < batches; b++) {
      payloads.add(batch(b, events, blocksPerEvent, Double.NaN));
    }
    long blocks = (long) batches * events * blocksPerEvent;
    Progress.line("engines", "throughput: %d batches, %d blocks", batches, blocks);

    // the stages alone first (they warm the shared code), then the connector
    KvBatchDecoder decoder = new KvBatchDecoder();
    double[] decode = stage(payloads, "decode", decoder::decode);
    RankTranslator translator = new RankTranslator(BS, 1 << 22);
    List<KvEvent> translated = new ArrayList<>();
    double[] translate = stage(payloads, "decode + translate", p -> {
      translated.clear();
      for (EngineEvent e : decoder.decode(p).events()) {
        translator.translate(e, translated);
      }
      return translated;
    });
    register(sink, "direct", 1 << 20);
    RankTranslator[] direct = {new RankTranslator(BS, 1 << 22)};
    RecordBatcher batcher = new RecordBatcher();
    long[] nextId = {1};
    double[] index = stage(payloads, "decode + translate + publish into the fan-out", p -> {
      translated.clear();
      for (EngineEvent e : decoder.decode(p).events()) {
        direct[0].translate(e, translated);
      }
      for (List<KvEventRecord> records : batcher.batches(translated, () -> nextId[0]++)) {
        sink.publish(MODEL, "direct", 0, records);
      }
      return translated;
    });
    double[] connector = connectorThroughput(sink, payloads, blocks);
    double zmqRate = blocks / connector[0];
    Report.Table table = new Report.Table("path", "blocks", "seconds", "blocks/s", "CPU µs per 1k blocks",
        "blocks/s vs the connector");
    row(table, "decode (this thread, no ZMQ)", blocks, decode, zmqRate);
    row(table, "decode + translate: tokens hashes (this thread, no ZMQ)", blocks, translate, zmqRate);
    row(table, "decode + translate + cut + publish into the fan-out and index (this thread, no ZMQ)", blocks, index,
        zmqRate);
    row(table, "ZMQ PUB → connector → fan-out → index (the connector's thread)", blocks, connector, zmqRate);
    report.heading("Blocks/s per connector");
    report.table(table);
    report.paragraph(String.format(Locale.ROOT, "Target >= 200k blocks/s per connector: %s (%s blocks/s). CPU µs "
        + "are the process's CPU time over the run (every thread: for the connector row also the ZMQ I/O thread "
        + "and the publisher), per 1,000 blocks stored; each batch also removes 256 blocks.",
        Report.verdict(zmqRate >= 200_000), Report.rate(zmqRate)));
  }

  private static void row(Report.Table table, String name, long blocks, double[] run, double zmqRate) {
    double rate = blocks / run[0];
    table.row(name, blocks, String.format(Locale.ROOT, "%.2f", run[0]), Report.rate(rate),
        String.format(Locale.ROOT, "%.1f", run[1] / (blocks / 1000.0) / 1000.0), Report.ratio(rate / zmqRate));
  }

  @FunctionalInterface
  interface Stage {
    Object apply(byte[] payload) throws Exception;
  }

  /** {seconds, process CPU nanos} of one stage over every payload (after a first, unmeasured pass). */
  private static double[] stage(List<byte[]> payloads, String name, Stage stage) throws Exception {
    for (byte[] payload : payloads) {
      stage.apply(payload);
    }
    long cpu0 = cpuNanos();
    long t0 = System.nanoTime();
    for (byte[] payload : payloads) {
      stage.apply(payload);
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    Progress.line("engines", "%s: %.2f s", name, seconds);
    return new double[] {seconds, cpuNanos() - cpu0};
  }

  /** {seconds, process CPU nanos} to apply every payload through a connector fed by a PUB socket. */
  private static double[] connectorThroughput(EngineSink sink, List<byte[]> payloads, long blocks) throws Exception {
    AtomicLong appliedBatches = new AtomicLong();
    AtomicLong appliedBlocks = new AtomicLong();
    try (ZContext context = new ZContext(1)) {
      ZMQ.Socket pub = context.createSocket(SocketType.PUB);
      pub.setSndHWM(payloads.size() + 1);
      pub.setLinger(0);
      pub.bind("tcp://127.0.0.1:*");
      String endpoint = pub.getLastEndpoint();
      EngineSpec spec = EngineSpec.of(MODEL, "zmq", EngineKind.VLLM, "http://127.0.0.1:1", null, endpoint, null,
          "kv-events", 1, BS, 1 << 20, null);
      EngineConnector connector = new EngineConnector(spec, "bench", "bench", "bench", sink, settings(), Map.of(),
          System::currentTimeMillis, (rank, seq, ts, stored) -> {
            appliedBlocks.addAndGet(stored);
            appliedBatches.incrementAndGet();
          });
      connector.start();
      try {
        long first = awaitConnected(connector, pub);
        long cpu0 = cpuNanos();
        long t0 = System.nanoTime();
        long base = appliedBatches.get();
        for (int i = 0; i < payloads.size(); i++) {
          while (i - (appliedBatches.get() - base) > 512) {
            Thread.onSpinWait();
          }
          send(pub, first + i, payloads.get(i));
        }
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (appliedBatches.get() - base < payloads.size() && System.nanoTime() < deadline) {
          Thread.sleep(1);
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        long cpu = cpuNanos() - cpu0;
        if (appliedBatches.get() - base < payloads.size()) {
          throw new IllegalStateException("the connector applied " + (appliedBatches.get() - base) + " of "
              + payloads.size() + " batches");
        }
        var rank = connector.status().rank(0);
        if (rank.gaps() > 0 || rank.clears() > 1 || rank.malformed() > 0) {
          throw new IllegalStateException("the throughput run lost batches: " + rank);
        }
        Progress.line("engines", "connector: %s blocks/s", Report.rate(blocks / seconds));
        return new double[] {seconds, cpu};
      } finally {
        connector.close();
      }
    }
  }

  /**
   * Sends empty batches (seq 0, 1, ...) until the connector applied one (its SUB socket is then subscribed: the
   * first ones are dropped by PUB before that, and the connector, with no replay endpoint, takes the first it sees);
   * returns the next seq.
   */
  private static long awaitConnected(EngineConnector connector, ZMQ.Socket pub) throws Exception {
    byte[] empty = emptyBatch();
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    long seq = 0;
    while (connector.status().rank(0).lastSeq() < 0) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the connector did not subscribe in 30 s: " + connector.status());
      }
      send(pub, seq++, empty);
      Thread.sleep(20);
    }
    // what is in flight lands before the measured batches
    long last = seq - 1;
    while (connector.status().rank(0).lastSeq() < last && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    return seq;
  }

  // ---------------------------------------------------------------- lag

  private static void lag(Report report, EngineSink sink, boolean quick) throws Exception {
    int blocksPerSecond = 10_000;
    long periodNanos = 1_600_000;  // one 16-block chain every 1.6 ms
    Duration duration = quick ? Duration.ofSeconds(1) : Duration.ofSeconds(20);
    Histogram lag = new Histogram(3);
    try (ZContext context = new ZContext(1)) {
      ZMQ.Socket pub = context.createSocket(SocketType.PUB);
      pub.setSndHWM(100_000);
      pub.setLinger(0);
      pub.bind("tcp://127.0.0.1:*");
      EngineSpec spec = EngineSpec.of(MODEL, "paced", EngineKind.VLLM, "http://127.0.0.1:1", null,
          pub.getLastEndpoint(), null, "kv-events", 1, BS, 1 << 20, null);
      boolean[] measuring = {false};
      EngineConnector connector = new EngineConnector(spec, "bench", "bench", "bench", sink, settings(), Map.of(),
          System::currentTimeMillis, (rank, seq, ts, stored) -> {
            if (measuring[0] && Double.isFinite(ts) && stored > 0) {
              long micros = micros(Instant.now()) - Math.round(ts * 1e6);
              synchronized (lag) {
                lag.recordValue(Math.max(0, micros));
              }
            }
          });
      connector.start();
      long gcBefore = 0;
      try {
        long seq = awaitConnected(connector, pub);
        long warmupEnd = System.nanoTime() + Duration.ofSeconds(quick ? 1 : 3).toNanos();
        long next = System.nanoTime();
        long end = warmupEnd + duration.toNanos();
        while (System.nanoTime() < end) {
          if (!measuring[0] && System.nanoTime() >= warmupEnd) {
            measuring[0] = true;
            gcBefore = gcMillis();
          }
          long now = System.nanoTime();
          if (now < next) {
            if (next - now > 200_000) {
              Thread.sleep(0, 100_000);
            } else {
              Thread.onSpinWait();
            }
            continue;
          }
          next += periodNanos;
          double ts = micros(Instant.now()) / 1e6;
          send(pub, seq, batch((int) seq + 1_000_000, 1, BS, ts));
          seq++;
        }
        long gcDuring = gcMillis() - gcBefore;
        Thread.sleep(200);
        var rank = connector.status().rank(0);
        report.heading("Publish → index lag at " + blocksPerSecond + " blocks/s");
        Report.Table table = new Report.Table("rate", "batches measured", "p50", "p99", "p99.9", "max", "gaps",
            "GC pauses during");
        synchronized (lag) {
          table.row(blocksPerSecond + " blocks/s (625 batches/s of 16 blocks)", lag.getTotalCount(),
              ms(lag.getValueAtPercentile(50)), ms(lag.getValueAtPercentile(99)),
              ms(lag.getValueAtPercentile(99.9)), ms(lag.getMaxValue()), rank.gaps(), gcDuring + " ms");
          report.table(table);
          report.paragraph(String.format(Locale.ROOT, "Target p99 <= 10 ms: %s. Lag is the connector's wall "
              + "clock at apply minus the batch's ts (set when the PUB socket was handed the batch), so it "
              + "includes ZMQ, decoding, hashing, the fan-out's local apply (and its topic publish); with the "
              + "machine's other load (the load average above) the tail is mostly time spent waiting for a CPU.",
              Report.verdict(lag.getValueAtPercentile(99) <= 10_000)));
        }
      } finally {
        connector.close();
      }
    }
  }

  // ---------------------------------------------------------------- scrapes

  private static void scrapes(Report report, boolean quick) throws Exception {
    report.heading("Scrape cost per engine");
    Report.Table table = new Report.Table("what", "page bytes", "scrapes", "wall µs p50", "wall µs p99",
        "CPU µs per scrape", "a core's share for 100 engines at 1 s");
    for (String page : List.of("vllm.prom", "vllm-dp2.prom")) {
      String text = Pages.page(page);
      int iterations = quick ? 200 : 20_000;
      for (int i = 0; i < iterations / 4; i++) {
        MetricsReader.read(EngineKind.VLLM, text, null);
      }
      Histogram wall = new Histogram(3);
      long cpu0 = threadCpuNanos();
      for (int i = 0; i < iterations; i++) {
        long t0 = System.nanoTime();
        MetricsReader.read(EngineKind.VLLM, text, null);
        wall.recordValue((System.nanoTime() - t0) / 1000 + 1);
      }
      double cpuUs = (threadCpuNanos() - cpu0) / 1000.0 / iterations;
      table.row("parse " + page, text.length(), iterations, wall.getValueAtPercentile(50),
          wall.getValueAtPercentile(99), String.format(Locale.ROOT, "%.1f", cpuUs), share(cpuUs));
    }
    try (MetricsServer server = new MetricsServer();
        Scraper scraper = new Scraper(Duration.ofSeconds(1), Duration.ofSeconds(2))) {
      String text = Pages.page("vllm.prom");
      server.page(text);
      String url = server.baseUrl() + "/metrics";
      int scrapes = quick ? 50 : 3000;
      for (int i = 0; i < scrapes / 5; i++) {
        scraper.scrapeOnce(url, EngineKind.VLLM, null);
      }
      Histogram wall = new Histogram(3);
      long cpu0 = cpuNanos();
      for (int i = 0; i < scrapes; i++) {
        long t0 = System.nanoTime();
        scraper.scrapeOnce(url, EngineKind.VLLM, null);
        wall.recordValue((System.nanoTime() - t0) / 1000 + 1);
      }
      double cpuUs = (cpuNanos() - cpu0) / 1000.0 / scrapes;
      table.row("HTTP scrape of vllm.prom (loopback; CPU of client and JDK server both)", text.length(), scrapes,
          wall.getValueAtPercentile(50), wall.getValueAtPercentile(99), String.format(Locale.ROOT, "%.1f", cpuUs),
          share(cpuUs));
    }
    report.table(table);
  }

  private static String share(double cpuMicrosPerScrape) {
    return String.format(Locale.ROOT, "%.2f %%", cpuMicrosPerScrape * 100 / 1e6 * 100);
  }

  // ---------------------------------------------------------------- helpers

  private static ConnectorSettings settings() {
    return new ConnectorSettings(Duration.ofSeconds(1), Duration.ofMillis(900), Duration.ofSeconds(2), 3,
        Duration.ofSeconds(2), Duration.ofSeconds(5), Duration.ofSeconds(10), 10_000, 64L << 20, Duration.ofSeconds(1),
        20_000);
  }

  private static void register(EngineSink sink, String worker, int totalKvBlocks) throws Exception {
    sink.register(MODEL, new WorkerConfig(worker, 0, 1, 8192, totalKvBlocks, BS, "http://127.0.0.1:1", "",
        WorkerRole.AGGREGATED), Duration.ofSeconds(10)).toCompletableFuture().get();
  }

  private static void send(ZMQ.Socket pub, long seq, byte[] payload) {
    pub.sendMore("kv-events");
    pub.sendMore(java.nio.ByteBuffer.allocate(8).putLong(seq).array());
    pub.send(payload, 0);
  }

  /**
   * Batch {@code b}: {@code events} BlockStored chains of {@code blocks} blocks (hashes and tokens unique to the
   * batch), and, from batch 8 on, a BlockRemoved of the blocks batch b - 8 stored.
   */
  static byte[] batch(int b, int events, int blocks, double ts) throws IOException {
    MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
    p.packMapHeader(3).packString("ts").packDouble(Double.isNaN(ts) ? micros(Instant.now()) / 1e6 : ts);
    boolean remove = b >= 8;
    p.packString("events").packArrayHeader(events + (remove ? 1 : 0));
    for (int e = 0; e < events; e++) {
      p.packMapHeader(8).packString("type").packString("BlockStored");
      p.packString("block_hashes").packArrayHeader(blocks);
      for (int k = 0; k < blocks; k++) {
        p.packLong(hash(b, e, k, events, blocks));
      }
      p.packString("parent_block_hash").packNil();
      p.packString("token_ids").packArrayHeader(blocks * BS);
      for (int t = 0; t < blocks * BS; t++) {
        p.packInt((b * 7919 + e * 104_729 + t) & 0x3FFFF);
      }
      p.packString("block_size").packInt(BS);
      p.packString("lora_id").packNil();
      p.packString("medium").packString("GPU");
      p.packString("lora_name").packNil();
    }
    if (remove) {
      p.packMapHeader(3).packString("type").packString("BlockRemoved");
      p.packString("block_hashes").packArrayHeader(events * blocks);
      for (int e = 0; e < events; e++) {
        for (int k = 0; k < blocks; k++) {
          p.packLong(hash(b - 8, e, k, events, blocks));
        }
      }
      p.packString("medium").packString("GPU");
    }
    p.packString("data_parallel_rank").packInt(0);
    return p.toByteArray();
  }

  private static byte[] emptyBatch() throws IOException {
    MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
    p.packMapHeader(2).packString("ts").packDouble(micros(Instant.now()) / 1e6).packString("events")
        .packArrayHeader(0);
    return p.toByteArray();
  }

  private static long hash(int b, int e, int k, int events, int blocks) {
    // unsigned values at and above 2^63 half the time, as engines publish them
    return (((long) b * events + e) * blocks + k) * 0x9E3779B97F4A7C15L;
  }

  private static long micros(Instant instant) {
    return instant.getEpochSecond() * 1_000_000 + instant.getNano() / 1000;
  }

  private static String ms(long micros) {
    return String.format(Locale.ROOT, "%.2f ms", micros / 1000.0);
  }

  private static long gcMillis() {
    long total = 0;
    for (var gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      total += Math.max(0, gc.getCollectionTime());
    }
    return total;
  }

  private static long cpuNanos() {
    var os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getProcessCpuTime() : 0;
  }

  private static long threadCpuNanos() {
    return ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
  }
}
