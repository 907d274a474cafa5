package io.kvrouter.bench;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.sequences.ActivePrefixIndex;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.runner.RunnerException;

/**
 * JMH: the admission actor's share of a Book and its Release in the active-prefix index (a booking's blocks added,
 * then removed), and a Select's probes of it over every rank. Ranks hold {@link #LIVE} live bookings each, whose
 * chains share the request's first blocks to varying depths, so tables hold a few thousand keys and counts above 1.
 * {@link #run} writes {@code active-prefix.md}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ActivePrefixBenchmark {
  static final int RANKS = 16;
  static final int LIVE = 8;

  @Param({"16", "128"})
  public int blocks;

  private final ActivePrefixIndex index = new ActivePrefixIndex();
  private Rank[] ranks;
  private long[] request;
  private long attempt = 1_000_000;

  @Setup(Level.Trial)
  public void setUp() {
    SplittableRandom random = new SplittableRandom(blocks * 31L);
    request = Fixtures.chain(random, blocks);
    ranks = new Rank[RANKS];
    long live = 0;
    for (int r = 0; r < RANKS; r++) {
      ranks[r] = new Rank(Fixtures.workerId(r), 0);
      for (int b = 0; b < LIVE; b++) {
        // the request's first blocks to a depth that differs per booking, then blocks of the booking's own
        int shared = (r * 7 + b * 3) % (blocks + 1);
        long[] chain = Arrays.copyOf(request, blocks);
        long[] own = Fixtures.chain(random, blocks - shared);
        System.arraycopy(own, 0, chain, shared, own.length);
        index.add(ranks[r], live++, chain);
      }
    }
  }

  /** A booking of the request's blocks added on one rank, then removed: what a Book and its Release change. */
  @Benchmark
  public int bookAndRelease() {
    Rank rank = ranks[(int) (attempt % RANKS)];
    long id = attempt++;
    index.add(rank, id, request);
    index.remove(rank, id);
    return (int) id;
  }

  /** The held depth of the request on every rank: a Select's probes. */
  @Benchmark
  public int matchEveryRank() {
    int sum = 0;
    for (Rank rank : ranks) {
      sum += index.matchedDepth(rank, request);
    }
    return sum;
  }

  static List<Path> run(Path out, boolean quick) throws RunnerException {
    Jmh jmh = new Jmh(quick);
    Report report = new Report("Active-prefix index: a Book and Release's changes, a Select's probes (JMH)");
    report.paragraph(String.format("`ActivePrefixBenchmark`: one thread, %d ranks with %d live bookings each "
        + "(chains of `blocks` blocks sharing the request's first blocks to depths that differ per booking). "
        + "`bookAndRelease` adds a booking of the request's blocks on one rank and removes it (the admission actor's "
        + "work in the index for one Book and its Release); `matchEveryRank` finds the request's held depth on "
        + "every rank (a Select's probes: a binary search of membership probes per rank). %s; sample-time mode, "
        + "with JMH's gc profiler.", RANKS, LIVE, jmh.describe()));
    String include = ActivePrefixBenchmark.class.getName() + ".(bookAndRelease|matchEveryRank)$";
    report.table(Jmh.table(jmh.run(jmh.options(include)
        .param("blocks", quick ? new String[] {"128"} : new String[] {"16", "128"})
        .addProfiler(GCProfiler.class).build())));
    return List.of(report.write(out, "active-prefix.md"));
  }
}
