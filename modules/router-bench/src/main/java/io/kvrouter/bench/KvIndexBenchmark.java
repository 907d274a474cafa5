package io.kvrouter.bench;

import io.kvrouter.core.indexer.KvIndex;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.LoadProjection;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.testkit.Requests;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * JMH: the event-fed KV index on {@link KvIndexBench}'s multi-turn trace. Before every iteration a fresh index gets
 * the first half of the trace; {@code write} applies the second half one event per call, {@code lookup} reads the
 * overlaps of the trace's 64-block requests against 64 candidates. The {@code concurrent} group runs readers next to
 * the writer; {@code writeAlone} and {@code lookupAlone} run one of them on its own. Sample time: per-call
 * percentiles.
 */
@State(Scope.Group)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class KvIndexBenchmark {
  /** Events in the trace (the second half is what the writer applies). */
  @Param({"400000"})
  public int events;

  private KvIndexBench.Trace trace;
  private KvIndex index;
  private SelectionView view;
  private int next;

  /** Each reader's own scratch and position in the requests. */
  @State(Scope.Thread)
  public static class Reader {
    private static final AtomicInteger READERS = new AtomicInteger();
    final Candidates candidates = new Candidates();
    int k = READERS.getAndIncrement() * 7919;
  }

  @Setup(Level.Trial)
  public void trace() {
    trace = KvIndexBench.trace(KvIndexBench.Settings.defaults(events), new SplittableRandom(2026));
  }

  @Setup(Level.Iteration)
  public void halfBuilt() {
    index = new KvIndex();
    int half = trace.events().size() / 2;
    for (int i = 0; i < half; i++) {
      apply(i);
    }
    next = half;
    view = Fixtures.state(trace.ranks().length, "kv", index).view();
  }

  private void apply(int i) {
    KvIndexBench.Event e = trace.events().get(i);
    index.apply(trace.ranks()[e.rank()], e.id(), e.event());
  }

  /** The candidates a lookup reads: every rank of the view. */
  private Candidates candidates(Reader reader) {
    if (reader.candidates.size() == 0) {
      LoadProjection.projectWorkerLoads(view, Requests.of(Fixtures.MODEL, "r", 1024), reader.candidates,
          Fixtures.CLOCK);
    }
    return reader.candidates;
  }

  private int lookupOnce(Reader reader) {
    long[][] requests = trace.requests();
    Candidates c = candidates(reader);
    index.overlaps(view, requests[Math.floorMod(reader.k++, requests.length)], c);
    return c.deviceOverlap(0);
  }

  /** One event of the second half; once the half is applied (only in tiny runs) a call does nothing. */
  private int writeOnce() {
    if (next < trace.events().size()) {
      apply(next++);
    }
    return next;
  }

  @Benchmark
  @Group("concurrent")
  public int lookup(Reader reader) {
    return lookupOnce(reader);
  }

  @Benchmark
  @Group("concurrent")
  public int write() {
    return writeOnce();
  }

  @Benchmark
  @Group("lookupAlone")
  public int lookupOnly(Reader reader) {
    return lookupOnce(reader);
  }

  @Benchmark
  @Group("writeAlone")
  public int writeOnly() {
    return writeOnce();
  }
}
