package io.kvrouter.bench;

import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.KvIndex;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.Requests;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.ref.Reference;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.HdrHistogram.AbstractHistogram;

/**
 * The event-fed KV index on a synthetic multi-turn trace: events/s for one writer, lookup latency for 1 and 3
 * concurrent readers while the writer applies events, and retained heap per (block, rank) entry.
 */
final class KvIndexBench {
  record Settings(int ranks, int prompts, int promptBlocks, int activeSessions, int rankCapacityBlocks, int events,
      int requestBlocks, int baselineLookups, int rounds, long capMillis, long memoryEntries) {
    static Settings defaults(boolean quick) {
      return quick
          ? new Settings(64, 8, 32, 256, 2_048, 6_000, 64, 5_000, 1, 20_000, 40_000)
          : new Settings(64, 8, 32, 256, 2_048, 400_000, 64, 100_000, 3, 60_000, 1_000_000);
    }
  }

  record Event(int rank, long id, KvEvent event) {}

  record Trace(Rank[] ranks, List<Event> events, long blocks, long[][] requests) {}

  record Row(String scenario, int readers, boolean withWriter, double eventsPerSecond, double blocksPerSecond,
      long lookups, double lookupsPerSecond, double p50, double p99, double p999, double max) {}

  record Memory(long entries, int blocks, long bytes) {}

  private static volatile long sink;

  private KvIndexBench() {}

  static List<Path> run(Path out, boolean quick) {
    Settings s = Settings.defaults(quick);
    Progress.line("kvindex", "generating a trace of %,d events", s.events());
    Trace trace = trace(s, new SplittableRandom(2026));
    List<Row> rows = new ArrayList<>();
    // warm the code paths once on a throw-away index
    Progress.line("kvindex", "warm-up: applying the trace once");
    replay(s, trace, 0, true);
    List<Row> writer = new ArrayList<>();
    List<Row> reader = new ArrayList<>();
    List<Row> oneAndWriter = new ArrayList<>();
    List<Row> threeAndWriter = new ArrayList<>();
    for (int round = 0; round < s.rounds(); round++) {
      writer.add(writerAlone(trace));
      reader.add(replay(s, trace, 1, false));
      oneAndWriter.add(replay(s, trace, 1, true));
      threeAndWriter.add(replay(s, trace, 3, true));
    }
    rows.add(median(writer, Comparator.comparingDouble(Row::eventsPerSecond)));
    rows.add(median(reader, Comparator.comparingDouble(Row::p99)));
    rows.add(median(oneAndWriter, Comparator.comparingDouble(Row::p99)));
    rows.add(median(threeAndWriter, Comparator.comparingDouble(Row::p99)));
    Memory memory = memory(s);
    return List.of(write(out, s, trace, rows, memory));
  }

  private static Row median(List<Row> rounds, Comparator<Row> order) {
    List<Row> sorted = new ArrayList<>(rounds);
    sorted.sort(order);
    return sorted.get(sorted.size() / 2);
  }

  // ---------------------------------------------------------------- trace

  private static final class Session {
    final int prompt;
    final int rank;
    long[] seq;
    int stored;
    int turnsLeft;
    boolean queued;

    Session(int prompt, int rank, long[] seq, int turns) {
      this.prompt = prompt;
      this.rank = rank;
      this.seq = seq;
      this.turnsLeft = turns;
    }
  }

  /**
   * Many sessions share a few system prompts; each session is sticky to one rank and each turn extends its prefix
   * by 4–16 blocks (one Stored chained under the rank's last block of the session, or from the root when the rank
   * lacks the prompt). A rank holds at most {@code rankCapacityBlocks}; beyond that its oldest session is evicted
   * (one Removed listing the session's own blocks) and stored again in full at its next turn.
   */
  static Trace trace(Settings s, SplittableRandom rnd) {
    Rank[] ranks = new Rank[s.ranks()];
    for (int i = 0; i < ranks.length; i++) {
      ranks[i] = Fixtures.worker(Fixtures.workerId(i)).rank(0);
    }
    long[][] prompts = new long[s.prompts()][];
    for (int p = 0; p < prompts.length; p++) {
      prompts[p] = Fixtures.chain(rnd, s.promptBlocks());
    }
    boolean[][] holdsPrompt = new boolean[s.ranks()][s.prompts()];
    int[] used = new int[s.ranks()];
    long[] eventIds = new long[s.ranks()];
    @SuppressWarnings("unchecked")
    ArrayDeque<Session>[] fifo = new ArrayDeque[s.ranks()];
    for (int r = 0; r < fifo.length; r++) {
      fifo[r] = new ArrayDeque<>();
    }
    Session[] active = new Session[s.activeSessions()];
    for (int i = 0; i < active.length; i++) {
      active[i] = newSession(s, rnd, prompts);
    }
    List<Event> events = new ArrayList<>(s.events());
    List<long[]> requests = new ArrayList<>();
    long blocks = 0;
    int pb = s.promptBlocks();
    while (events.size() < s.events()) {
      int slot = rnd.nextInt(active.length);
      Session session = active[slot];
      int r = session.rank;
      session.seq = Fixtures.extend(session.seq, rnd, 4 + rnd.nextInt(13));
      if (requests.size() < 4096 && rnd.nextInt(8) == 0) {
        long[] request = session.seq.length >= s.requestBlocks()
            ? Arrays.copyOf(session.seq, s.requestBlocks())
            : Fixtures.extend(session.seq, rnd, s.requestBlocks() - session.seq.length);
        requests.add(request);
      }
      int from = session.stored;
      if (from == 0) {
        from = holdsPrompt[r][session.prompt] ? pb : 0;
        holdsPrompt[r][session.prompt] = true;
      }
      int to = session.seq.length;
      events.add(new Event(r, ++eventIds[r], Fixtures.stored(session.seq, from, to)));
      blocks += to - from;
      used[r] += to - Math.max(from, pb);
      session.stored = to;
      if (!session.queued) {
        fifo[r].add(session);
        session.queued = true;
      }
      while (used[r] > s.rankCapacityBlocks() && fifo[r].size() > 1 && events.size() < s.events()) {
        Session victim = fifo[r].poll();
        if (victim == session) {
          fifo[r].add(victim);
          continue;
        }
        victim.queued = false;
        events.add(new Event(r, ++eventIds[r], new KvEvent.Removed(StorageTier.DEVICE,
            Fixtures.engineIds(victim.seq, pb, victim.stored))));
        used[r] -= victim.stored - pb;
        victim.stored = 0;
      }
      if (--session.turnsLeft == 0) {
        active[slot] = newSession(s, rnd, prompts);
      }
    }
    if (requests.isEmpty()) {
      requests.add(Fixtures.extend(prompts[0], rnd, s.requestBlocks() - pb));
    }
    return new Trace(ranks, events, blocks, requests.toArray(long[][]::new));
  }

  private static Session newSession(Settings s, SplittableRandom rnd, long[][] prompts) {
    int p = rnd.nextInt(prompts.length);
    return new Session(p, rnd.nextInt(s.ranks()), prompts[p], 2 + rnd.nextInt(9));
  }

  // ---------------------------------------------------------------- throughput and latency

  private static Row writerAlone(Trace trace) {
    KvIndex index = new KvIndex();
    long start = System.nanoTime();
    for (Event e : trace.events()) {
      index.apply(trace.ranks()[e.rank()], e.id(), e.event());
    }
    long wall = System.nanoTime() - start;
    sink += index.entryCount();
    Row row = new Row("writer alone (all events)", 0, true, trace.events().size() * 1e9 / wall,
        trace.blocks() * 1e9 / wall, 0, 0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
    Progress.line("kvindex", "writer alone: %s events/s, %s blocks/s, %,d entries at the end",
        Report.rate(row.eventsPerSecond()), Report.rate(row.blocksPerSecond()), index.entryCount());
    return row;
  }

  /**
   * A fresh index gets the first half of the trace; then {@code readers} threads look up 64-block requests (64
   * candidates) while, if {@code withWriter}, one thread applies the second half. Without a writer the readers do a
   * fixed number of lookups on the half-built index.
   */
  private static Row replay(Settings s, Trace trace, int readers, boolean withWriter) {
    KvIndex index = new KvIndex();
    List<Event> events = trace.events();
    int half = events.size() / 2;
    for (int i = 0; i < half; i++) {
      Event e = events.get(i);
      index.apply(trace.ranks()[e.rank()], e.id(), e.event());
    }
    AdmissionState state = Fixtures.state(s.ranks(), "kv", index);
    SelectionView view = state.view();
    AtomicBoolean stop = new AtomicBoolean();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(s.capMillis());
    AbstractHistogram[] latency = Latency.histograms(Math.max(1, readers));
    long[] counts = new long[Math.max(1, readers)];
    CountDownLatch started = new CountDownLatch(readers);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < readers; t++) {
      int reader = t;
      Thread thread = new Thread(() -> {
        Candidates c = new Candidates();
        LoadProjection.projectWorkerLoads(view, Requests.of(Fixtures.MODEL, "r", 1024), c,
            System.currentTimeMillis());
        long[][] requests = trace.requests();
        AbstractHistogram h = latency[reader];
        long n = 0;
        long acc = 0;
        int k = reader * 7919;
        started.countDown();
        while (true) {
          long[] hashes = requests[Math.floorMod(k++, requests.length)];
          long t0 = System.nanoTime();
          index.overlaps(view, hashes, c);
          long t1 = System.nanoTime();
          Latency.record(h, t1 - t0);
          acc += c.deviceOverlap(0);
          n++;
          if (withWriter ? stop.get() : n >= s.baselineLookups()) {
            break;
          }
          if ((n & 1023) == 0 && t1 > deadline) {
            break;
          }
        }
        counts[reader] = n;
        sink += acc;
      }, "kv-reader-" + t);
      thread.setDaemon(true);
      threads.add(thread);
      thread.start();
    }
    awaitQuietly(started);
    long start = System.nanoTime();
    int applied = 0;
    long blocks = 0;
    if (withWriter) {
      for (int i = half; i < events.size(); i++) {
        Event e = events.get(i);
        index.apply(trace.ranks()[e.rank()], e.id(), e.event());
        if (e.event() instanceof KvEvent.Stored st) {
          blocks += st.blockHashes().length;
        }
        applied++;
        if ((applied & 255) == 0 && System.nanoTime() > deadline) {
          break;
        }
      }
    }
    long writerWall = System.nanoTime() - start;
    stop.set(true);
    for (Thread thread : threads) {
      try {
        thread.join(TimeUnit.MILLISECONDS.toMillis(s.capMillis()) + 10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      if (thread.isAlive()) {
        throw new IllegalStateException(thread.getName() + " did not stop");
      }
    }
    long wall = System.nanoTime() - start;
    AbstractHistogram merged = Latency.merge(latency, readers);
    long lookups = Arrays.stream(counts).sum();
    String scenario = withWriter
        ? readers + (readers == 1 ? " reader" : " readers") + " + writer (second half of the events)"
        : readers + " reader, no writer";
    Row row = new Row(scenario, readers, withWriter, withWriter ? applied * 1e9 / writerWall : Double.NaN,
        withWriter ? blocks * 1e9 / writerWall : Double.NaN, lookups, lookups * 1e9 / wall,
        merged.getValueAtPercentile(50), merged.getValueAtPercentile(99), merged.getValueAtPercentile(99.9),
        merged.getMaxValue());
    Progress.line("kvindex", "%s: %s events/s, %s lookups/s, p50 %s µs, p99 %s µs",
        readers == 0 ? "warm-up done" : scenario,
        withWriter ? Report.rate(row.eventsPerSecond()) : "–", Report.rate(row.lookupsPerSecond()),
        Report.us(row.p50()), Report.us(row.p99()));
    Reference.reachabilityFence(state);
    return row;
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      if (!latch.await(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("readers did not start");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  // ---------------------------------------------------------------- memory

  /**
   * Retained heap of an index holding {@code memoryEntries} (block, rank) entries, 4 ranks per block on average:
   * chains of 64 blocks from the root, each stored on 1–7 distinct ranks of 64.
   */
  static Memory memory(Settings s) {
    Rank[] ranks = new Rank[s.ranks()];
    for (int i = 0; i < ranks.length; i++) {
      ranks[i] = Fixtures.worker(Fixtures.workerId(i)).rank(0);
    }
    SplittableRandom rnd = new SplittableRandom(77);
    long before = settledHeap();
    KvIndex index = new KvIndex();
    int[] pick = new int[s.ranks()];
    for (int i = 0; i < pick.length; i++) {
      pick[i] = i;
    }
    while (index.entryCount() < s.memoryEntries()) {
      long[] seq = Fixtures.chain(rnd, 64);
      long[] ids = Fixtures.engineIds(seq, 0, seq.length);
      int holders = 1 + rnd.nextInt(7);
      for (int k = 0; k < holders; k++) {
        int j = k + rnd.nextInt(pick.length - k);
        int tmp = pick[k];
        pick[k] = pick[j];
        pick[j] = tmp;
        index.applyStored(ranks[pick[k]], StorageTier.DEVICE, null, ids, seq);
      }
    }
    long after = settledHeap();
    Memory memory = new Memory(index.entryCount(), index.blockCount(), after - before);
    Reference.reachabilityFence(index);
    Progress.line("kvindex", "memory: %,d entries on %,d blocks: %,d bytes, %.1f bytes/entry", memory.entries(),
        memory.blocks(), memory.bytes(), memory.bytes() / (double) memory.entries());
    return memory;
  }

  private static long settledHeap() {
    MemoryMXBean bean = ManagementFactory.getMemoryMXBean();
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 4; i++) {
      System.gc();
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      used = Math.min(used, bean.getHeapMemoryUsage().getUsed());
    }
    return used;
  }

  // ---------------------------------------------------------------- report

  private static Path write(Path out, Settings s, Trace trace, List<Row> rows, Memory memory) {
    Report report = new Report("KV index: events, lookups, memory");
    long removed = trace.events().stream().filter(e -> e.event() instanceof KvEvent.Removed).count();
    report.paragraph(String.format("Synthetic multi-turn trace: %d ranks, %d system prompts of %d blocks, %d active "
            + "sessions (each sticky to one rank, 2–10 turns of 4–16 new blocks), rank capacity %,d blocks with "
            + "oldest-session eviction: %,d events (%,d Stored carrying %,d blocks, %,d Removed). Lookups are "
            + "`KvIndex.overlaps(view, hashes, candidates)` for %d-block requests taken from the sessions, against "
            + "%d candidates (a 64-worker view). Readers and the writer are plain threads on this %d-CPU machine. "
            + "Each scenario ran %d times on a fresh index, interleaved; the row is the median run (by events/s for "
            + "the writer alone, by lookup p99 otherwise).",
        s.ranks(), s.prompts(), s.promptBlocks(), s.activeSessions(), s.rankCapacityBlocks(), trace.events().size(),
        trace.events().size() - removed, trace.blocks(), removed, s.requestBlocks(), s.ranks(),
        Runtime.getRuntime().availableProcessors(), s.rounds()));
    Report.Table table = new Report.Table("scenario", "events/s", "blocks/s", "lookups/s", "lookup p50 (µs)",
        "p99 (µs)", "p99.9 (µs)", "max (µs)");
    for (Row r : rows) {
      table.row(r.scenario(), Double.isNaN(r.eventsPerSecond()) ? "–" : Report.rate(r.eventsPerSecond()),
          Double.isNaN(r.blocksPerSecond()) ? "–" : Report.rate(r.blocksPerSecond()),
          r.lookups() == 0 ? "–" : Report.rate(r.lookupsPerSecond()), fmt(r.p50()), fmt(r.p99()), fmt(r.p999()),
          fmt(r.max()));
    }
    report.table(table);
    double perEntry = memory.bytes() / (double) memory.entries();
    report.heading("Retained heap");
    report.paragraph(String.format("Chains of 64 blocks from the root, each stored on 1–7 of %d ranks (4 on "
        + "average) with `applyStored`, until %,d entries; heap used after `System.gc()` ×4 (minimum of the "
        + "readings), before and after building, with the index kept reachable.", s.ranks(), s.memoryEntries()));
    Report.Table mem = new Report.Table("(block, rank) entries", "blocks (nodes)", "ranks per block",
        "retained bytes", "bytes per entry", "bytes per block");
    mem.row(String.format("%,d", memory.entries()), String.format("%,d", memory.blocks()),
        String.format(java.util.Locale.ROOT, "%.2f", memory.entries() / (double) memory.blocks()),
        String.format("%,d", memory.bytes()), String.format(java.util.Locale.ROOT, "%.1f", perEntry),
        String.format(java.util.Locale.ROOT, "%.1f", memory.bytes() / (double) memory.blocks()));
    report.table(mem);
    Report.Table targets = new Report.Table("target", "measured", "verdict");
    for (Row r : rows) {
      if (r.withWriter() && r.readers() > 0) {
        targets.row("lookup p99 < 10 µs (64 blocks, 64 workers, events applied), " + r.readers()
            + (r.readers() == 1 ? " reader" : " readers"), fmt(r.p99()) + " µs", Report.verdict(r.p99() < 10_000));
      }
    }
    targets.row("≤ 100 bytes per (block, rank) entry at " + String.format("%,d", memory.entries()) + " entries",
        String.format(java.util.Locale.ROOT, "%.1f", perEntry), Report.verdict(perEntry <= 100));
    report.table(targets);
    return report.write(out, "kvindex.md");
  }

  private static String fmt(double nanos) {
    return Double.isNaN(nanos) ? "–" : Report.us(nanos);
  }
}
