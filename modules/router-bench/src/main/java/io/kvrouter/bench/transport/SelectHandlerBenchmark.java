package io.kvrouter.bench.transport;

import com.google.protobuf.InvalidProtocolBufferException;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.bench.LoopbackNode;
import io.kvrouter.server.RouterNode;
import io.kvrouter.server.grpc.ProtoMapping;
import io.kvrouter.server.grpc.RouterService;
import io.kvrouter.server.metrics.RouterMetrics;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.grpc.javadsl.MetadataBuilder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The transport bench's Select without the transport: the same router workload ({@link RouterSetup}: 64 workers,
 * kv, KV events on 16 of them) and the same request bytes, decoded, answered by the router's {@link RouterService} and
 * encoded, next to what a no-op server does with the same bytes (decode, encode a fixed Selection). The difference is
 * the router's own work per call, which the transport bench's server CPU includes on top of grpc-java's.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class SelectHandlerBenchmark {
  @Param({"hashes", "tokens"})
  public String body;

  private RouterNode node;
  private RouterService router;
  private byte[] request;

  @Setup(Level.Trial)
  public void start() throws InterruptedException {
    node = LoopbackNode.start("kvrouter.grpc.binding = netty");
    RouterSetup.run(node.grpcPort(), true);
    router = new RouterService(node.cluster(),
        new ProtoMapping(new RequestLimits(node.system().settings().config().getInt("kvrouter.max-tokens"))),
        RouterMetrics.get(node.system()));
    request = Bodies.request(Bodies.Body.of(body)).toByteArray();
  }

  @TearDown(Level.Trial)
  public void stop() {
    node.close();
  }

  /** What every no-op server does per call. */
  @Benchmark
  public byte[] noop() throws InvalidProtocolBufferException {
    RouteRequest in = RouteRequest.parseFrom(request);
    return in.getModel().isEmpty() ? null : Bodies.SELECTION.toByteArray();
  }

  /** The router's handler: decode, Select on the calling thread, encode. */
  @Benchmark
  public byte[] select() throws InvalidProtocolBufferException {
    RouteRequest in = RouteRequest.parseFrom(request);
    Selection answer = router.select(in, MetadataBuilder.empty()).toCompletableFuture().getNow(null);
    return answer.toByteArray();
  }
}
