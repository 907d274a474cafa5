package io.kvrouter.bench.transport;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.server.grpc.GrpcServer;
import io.kvrouter.server.transport.GrpcServices;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.japi.function.Function;

/**
 * Bench-only router for "the Dynamo PR's yield": the {@code pekko} binding's own handler
 * ({@link GrpcServer#handler} over {@link GrpcServices}, body limit, health and reflection included), with a Select
 * request either handled on the thread that received it ({@code off}: exactly the {@code pekko} binding) or handed
 * once to the actor system's default dispatcher before anything of it runs — decoding and the pick ({@code on}).
 * Usage: {@code YieldRouterServer off|on}; ports from the same {@code KVROUTER_*} environment as {@code Main};
 * prints {@code PORT n} when bound; exits when its stdin closes.
 */
public final class YieldRouterServer {
  private static final String SELECT_PATH = "/kvrouter.v1.Router/Select";

  private YieldRouterServer() {}

  public static void main(String[] args) {
    try {
      serve(args);
    } catch (Throwable e) {
      e.printStackTrace();
      System.exit(1);
    }
  }

  private static void serve(String[] args) throws Exception {
    if (System.getProperty("java.util.concurrent.ForkJoinPool.common.parallelism") == null) {
      System.setProperty("java.util.concurrent.ForkJoinPool.common.parallelism", "4");
    }
    boolean hop = "on".equals(args[0]);
    Config config = ConfigFactory.load(ConfigFactory.parseResourcesAnySyntax("application"));
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "kvrouter", config);
    Cluster cluster = Cluster.get(system);
    cluster.manager().tell(Join.create(cluster.selfMember().address()));
    RouterCluster routing = RouterCluster.init(system, Clock.SYSTEM);
    GrpcServices services = GrpcServices.create(routing, new RequestLimits(config.getInt("kvrouter.max-tokens")),
        () -> cluster.selfMember().status() == MemberStatus.up());
    Function<HttpRequest, CompletionStage<HttpResponse>> stock = GrpcServer.handler(system, services.router(),
        services.workers(), services.admin(), services.health(), config.getBytes("kvrouter.grpc.max-message-bytes"));
    Function<HttpRequest, CompletionStage<HttpResponse>> handler = hop
        ? new HopSelect(stock, system.executionContext())
        : stock;
    ServerBinding binding = GrpcServer.bind(system, "127.0.0.1", config.getInt("kvrouter.grpc.port"), handler)
        .toCompletableFuture().get(30, TimeUnit.SECONDS);
    System.out.println("PORT " + binding.localAddress().getPort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // serve until the bench closes our stdin
    }
    system.terminate();
    System.exit(0);
  }

  /** Hands each Select request once to {@code executor}; every other request runs where it arrived. */
  static final class HopSelect implements Function<HttpRequest, CompletionStage<HttpResponse>> {
    private final Function<HttpRequest, CompletionStage<HttpResponse>> delegate;
    private final Executor executor;

    HopSelect(Function<HttpRequest, CompletionStage<HttpResponse>> delegate, Executor executor) {
      this.delegate = delegate;
      this.executor = executor;
    }

    @Override
    public CompletionStage<HttpResponse> apply(HttpRequest request) throws Exception {
      if (!SELECT_PATH.equals(request.getUri().path())) {
        return delegate.apply(request);
      }
      CompletableFuture<HttpResponse> answer = new CompletableFuture<>();
      executor.execute(() -> {
        try {
          delegate.apply(request).whenComplete((response, failure) -> {
            if (failure != null) {
              answer.completeExceptionally(failure);
            } else {
              answer.complete(response);
            }
          });
        } catch (Throwable e) {
          answer.completeExceptionally(e);
        }
      });
      return answer;
    }
  }
}
