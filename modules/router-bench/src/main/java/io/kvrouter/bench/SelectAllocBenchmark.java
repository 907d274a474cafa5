package io.kvrouter.bench;

import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * One inline Select on a 4-worker view over a populated KV index, requests of 64 blocks; run with {@code -prof gc}
 * by {@link AllocBench} to read bytes allocated per call.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class SelectAllocBenchmark {
  @Param({"least_in_flight", "kv"})
  public String policy;

  @Param({"64"})
  public int blocks;

  @Param({"4"})
  public int workers;

  private SelectionView view;
  private SelectionRequest request;

  @Setup
  public void setUp() {
    long[] hashes = Fixtures.chain(new SplittableRandom(5), blocks);
    view = Fixtures.kvState(workers, policy, hashes, 2, 13).view();
    request = Fixtures.request(hashes, "alloc");
  }

  @Benchmark
  public SelectionResult select() {
    return Selector.select(view, request, Candidates.forCurrentThread(), Fixtures.CLOCK);
  }
}
