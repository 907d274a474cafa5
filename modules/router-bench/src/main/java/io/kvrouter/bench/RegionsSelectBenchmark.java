package io.kvrouter.bench;

import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.server.RouterNode;
import io.kvrouter.server.grpc.ProtoMapping;
import io.kvrouter.server.grpc.RouterService;
import io.kvrouter.server.metrics.RouterMetrics;
import java.util.SplittableRandom;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * JMH: a Select through {@link RouterService#select} (request mapping, hashing of 1,024 token ids, the pick, metrics)
 * on two regions of one node each, both idle with 4 workers: regional on eu; global on eu, whose pool wins the tie by
 * name, so the pick is inline as a regional one plus the pool choice; global on us, answered with eu's region and
 * endpoint from us's pool summaries.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class RegionsSelectBenchmark {
  static final String MODEL = "bench/regions";

  private TwoRegions regions;
  private RouterService usRouter;
  private RouterService euRouter;
  private RouteRequest regional;
  private RouteRequest global;

  @Setup(Level.Trial)
  public void setUp() {
    regions = TwoRegions.start();
    TwoRegions.register(regions.us, MODEL, 4);
    TwoRegions.register(regions.eu, MODEL, 4);
    for (RouterNode node : new RouterNode[] {regions.us, regions.eu}) {
      regions.awaitPool(node, MODEL, "us");
      regions.awaitPool(node, MODEL, "eu");
    }
    usRouter = router(regions.us);
    euRouter = router(regions.eu);
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(MODEL);
    SplittableRandom tokens = new SplittableRandom(7);
    for (int i = 0; i < 1024; i++) {
      request.addTokenIds(tokens.nextInt(32_000));
    }
    regional = request.setScope(io.kvrouter.api.v1.Scope.SCOPE_REGION).build();
    global = request.setScope(io.kvrouter.api.v1.Scope.SCOPE_GLOBAL).build();
    check(euRouter.select(regional, null), "eu");
    check(euRouter.select(global, null), "eu");
    check(usRouter.select(global, null), "eu");
  }

  private static RouterService router(RouterNode node) {
    return new RouterService(node.cluster(), new ProtoMapping(new RequestLimits(131_072, 1 << 20, 1024, 1024)),
        RouterMetrics.get(node.system()));
  }

  private static void check(CompletionStage<Selection> answer, String region) {
    Selection selection = TwoRegions.join(answer);
    if (!selection.getRegion().equals(region)) {
      throw new IllegalStateException("expected region " + region + ", got " + selection);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    regions.close();
  }

  @Benchmark
  public CompletionStage<Selection> regional() {
    return euRouter.select(regional, null);
  }

  @Benchmark
  public CompletionStage<Selection> globalInline() {
    return euRouter.select(global, null);
  }

  @Benchmark
  public CompletionStage<Selection> globalOtherRegion() {
    return usRouter.select(global, null);
  }
}
