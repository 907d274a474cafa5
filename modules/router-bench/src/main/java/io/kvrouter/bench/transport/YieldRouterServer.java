package io.kvrouter.bench.transport;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.PrefillMarked;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.Renewed;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterPowerApi;
import io.kvrouter.api.v1.RouterPowerApiHandlerFactory;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.WorkersPowerApiHandlerFactory;
import io.kvrouter.api.v1.AdminPowerApiHandlerFactory;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.server.grpc.AdminService;
import io.kvrouter.server.grpc.GrpcErrors;
import io.kvrouter.server.grpc.ProtoMapping;
import io.kvrouter.server.grpc.RouterService;
import io.kvrouter.server.grpc.WorkersService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.grpc.javadsl.Metadata;
import org.apache.pekko.grpc.javadsl.ServiceHandler;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;

/**
 * Bench-only router for "the Dynamo PR's yield": the real {@link RouterService}, Workers and Admin services on
 * Pekko gRPC's stock handlers (as the {@code pekko} binding serves them, without health, reflection and the body
 * limit), with Select either completed on the handler's thread ({@code off}) or handed once to the actor system's
 * default dispatcher before the pick ({@code on}). Usage: {@code YieldRouterServer off|on}; ports from the same
 * {@code KVROUTER_*} environment as {@code Main}; prints {@code PORT n} when bound.
 */
public final class YieldRouterServer {
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
    RequestLimits limits = new RequestLimits(config.getInt("kvrouter.max-tokens"));
    RouterService service = new RouterService(routing, new ProtoMapping(limits));
    RouterPowerApi router = hop ? new HoppingSelect(service, system.executionContext()) : service;
    var errors = GrpcErrors.handler();
    var handler = ServiceHandler.concatOrNotFound(
        RouterPowerApiHandlerFactory.create(router, errors, system),
        WorkersPowerApiHandlerFactory.create(new WorkersService(routing), errors, system),
        AdminPowerApiHandlerFactory.create(new AdminService(routing), errors, system));
    ServerBinding binding = Http.get(system).newServerAt("127.0.0.1", config.getInt("kvrouter.grpc.port"))
        .bind(handler).toCompletableFuture().get(30, TimeUnit.SECONDS);
    System.out.println("PORT " + binding.localAddress().getPort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // serve until the bench closes our stdin
    }
    system.terminate();
    System.exit(0);
  }

  /** Select handed once to another executor before the pick; everything else as RouterService answers it. */
  static final class HoppingSelect implements RouterPowerApi {
    private final RouterService delegate;
    private final Executor executor;

    HoppingSelect(RouterService delegate, Executor executor) {
      this.delegate = delegate;
      this.executor = executor;
    }

    @Override
    public CompletionStage<Selection> select(RouteRequest in, Metadata metadata) {
      CompletableFuture<Selection> answer = new CompletableFuture<>();
      executor.execute(() -> delegate.select(in, metadata).whenComplete((selection, failure) -> {
        if (failure != null) {
          answer.completeExceptionally(failure);
        } else {
          answer.complete(selection);
        }
      }));
      return answer;
    }

    @Override
    public CompletionStage<Booking> book(RouteRequest in, Metadata metadata) {
      return delegate.book(in, metadata);
    }

    @Override
    public CompletionStage<Released> release(BookingRef in, Metadata metadata) {
      return delegate.release(in, metadata);
    }

    @Override
    public CompletionStage<PrefillMarked> markPrefillDone(BookingRef in, Metadata metadata) {
      return delegate.markPrefillDone(in, metadata);
    }

    @Override
    public CompletionStage<Renewed> renew(BookingRef in, Metadata metadata) {
      return delegate.renew(in, metadata);
    }
  }
}
