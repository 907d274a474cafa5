package io.kvrouter.bench;

import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.KvIndex;
import io.kvrouter.core.testkit.IndexWrites;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.model.Rank;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.ref.Reference;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;

/**
 * The event-fed KV index on a synthetic multi-turn trace: events/s for one writer and lookup latency for 1 and 3
 * readers while the writer applies events ({@link KvIndexBenchmark}, JMH), and retained heap per (block, rank)
 * entry (own code: JMH measures time and allocation rate, not what an index keeps).
 */
final class KvIndexBench {
  record Settings(int ranks, int prompts, int promptBlocks, int activeSessions, int rankCapacityBlocks, int events,
      int requestBlocks) {
    static Settings defaults(int events) {
      return new Settings(64, 8, 32, 256, 2_048, events, 64);
    }
  }

  record Event(int rank, long id, KvEvent event) {}

  record Trace(Rank[] ranks, List<Event> events, long blocks, long[][] requests) {}

  record Memory(long entries, int blocks, long bytes) {}

  private KvIndexBench() {}

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    int events = quick ? 6_000 : 400_000;
    Settings s = Settings.defaults(events);
    Trace trace = trace(s, new SplittableRandom(2026));
    Jmh jmh = new Jmh(quick);
    String name = KvIndexBenchmark.class.getName();
    List<RunResult> alone = jmh.run(jmh.options(name + ".(writeAlone|lookupAlone)$")
        .param("events", String.valueOf(events)).build());
    List<RunResult> concurrent = new ArrayList<>();
    for (int readers : new int[] {1, 3}) {
      concurrent.addAll(jmh.run(jmh.options(name + ".concurrent$").param("events", String.valueOf(events))
          .threadGroups(readers, 1).build()));
    }
    Memory memory = memory(s, quick ? 40_000 : 1_000_000);
    return List.of(write(out, s, jmh, trace, alone, concurrent, memory));
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

  // ---------------------------------------------------------------- memory

  /**
   * Retained heap of an index holding {@code entries} (block, rank) entries, 4 ranks per block on average:
   * chains of 64 blocks from the root, each stored on 1–7 distinct ranks of 64.
   */
  static Memory memory(Settings s, long entries) {
    Rank[] ranks = new Rank[s.ranks()];
    for (int i = 0; i < ranks.length; i++) {
      ranks[i] = Fixtures.worker(Fixtures.workerId(i)).rank(0);
    }
    SplittableRandom rnd = new SplittableRandom(77);
    long before = settledHeap();
    KvIndex index = new KvIndex();
    IndexWrites writes = IndexWrites.to(index);
    int[] pick = new int[s.ranks()];
    for (int i = 0; i < pick.length; i++) {
      pick[i] = i;
    }
    while (index.entryCount() < entries) {
      long[] seq = Fixtures.chain(rnd, 64);
      long[] ids = Fixtures.engineIds(seq, 0, seq.length);
      int holders = 1 + rnd.nextInt(7);
      for (int k = 0; k < holders; k++) {
        int j = k + rnd.nextInt(pick.length - k);
        int tmp = pick[k];
        pick[k] = pick[j];
        pick[j] = tmp;
        writes.stored(ranks[pick[k]], StorageTier.DEVICE, null, ids, seq);
      }
    }
    long after = settledHeap();
    Memory memory = new Memory(index.entryCount(), index.blockCount(), after - before);
    Reference.reachabilityFence(index);
    Progress.line("kvindex", "memory: %,d entries on %,d blocks: %,d bytes, %.1f bytes/entry", memory.entries(),
        memory.blocks(), memory.bytes(), memory.bytes() / (double) memory.entries());
    return memory;
  }

  /** Heap used after System.gc() x4, the minimum of the readings (MemoryBench uses it too). */
  static long settledHeap() {
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

  private static Path write(Path out, Settings s, Jmh jmh, Trace trace, List<RunResult> alone,
      List<RunResult> concurrent, Memory memory) {
    Report report = new Report("KV index: events, lookups, memory");
    long removed = trace.events().stream().filter(e -> e.event() instanceof KvEvent.Removed).count();
    report.paragraph(String.format("Synthetic multi-turn trace: %d ranks, %d system prompts of %d blocks, %d active "
            + "sessions (each sticky to one rank, 2–10 turns of 4–16 new blocks), rank capacity %,d blocks with "
            + "oldest-session eviction: %,d events (%,d Stored carrying %,d blocks, %,d Removed). "
            + "`KvIndexBenchmark` (JMH sample time, ns per call; %s): before every iteration a fresh index gets the "
            + "first half of the events; `write` applies the second half, one event per call; `lookup` is "
            + "`KvIndex.overlaps(view, hashes, candidates)` for a %d-block request taken from the sessions, against "
            + "%d candidates (a 64-worker view). `concurrent` runs `lookup` on 1 or 3 threads (`threads` counts "
            + "the group's threads) next to one `write`, on this %d-CPU machine.",
        s.ranks(), s.prompts(), s.promptBlocks(), s.activeSessions(), s.rankCapacityBlocks(), trace.events().size(),
        trace.events().size() - removed, trace.blocks(), removed, jmh.describe(), s.requestBlocks(), s.ranks(),
        Runtime.getRuntime().availableProcessors()));
    report.table(Jmh.table(alone));
    report.table(Jmh.table(concurrent, "lookup", "write"));
    double perEntry = memory.bytes() / (double) memory.entries();
    report.heading("Retained heap");
    report.paragraph(String.format("Chains of 64 blocks from the root, each stored on 1–7 of %d ranks (4 on "
        + "average) with `IndexWrites.stored`, until %,d entries; heap used after `System.gc()` ×4 (minimum of the "
        + "readings), before and after building, with the index kept reachable.", s.ranks(), memory.entries()));
    Report.Table mem = new Report.Table("(block, rank) entries", "blocks (nodes)", "retained bytes",
        "bytes per entry");
    mem.row(String.format("%,d", memory.entries()), String.format("%,d", memory.blocks()),
        String.format("%,d", memory.bytes()), String.format(java.util.Locale.ROOT, "%.1f", perEntry));
    report.table(mem);
    Report.Table targets = new Report.Table("target", "measured", "verdict");
    for (RunResult r : concurrent) {
      double p99 = Jmh.secondary(r, "lookup").getStatistics().getPercentile(99);
      targets.row("lookup p99 < 10 µs (64 blocks, 64 workers, events applied), " + (r.getParams().getThreads() - 1)
          + " reader(s) + writer", Report.us(p99) + " µs", Report.verdict(p99 < 10_000));
    }
    targets.row("≤ 100 bytes per (block, rank) entry at " + String.format("%,d", memory.entries()) + " entries",
        String.format(java.util.Locale.ROOT, "%.1f", perEntry), Report.verdict(perEntry <= 100));
    report.table(targets);
    return report.write(out, "kvindex.md");
  }
}
