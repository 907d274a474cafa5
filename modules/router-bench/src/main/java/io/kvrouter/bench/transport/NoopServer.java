package io.kvrouter.bench.transport;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.PrefillMarked;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.Renewed;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.RouterPowerApi;
import io.kvrouter.api.v1.RouterPowerApiHandlerFactory;
import io.kvrouter.api.v1.Selection;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;

/**
 * A no-op kvrouter.v1.Router server in its own process: every variant decodes the RouteRequest (or BookingRef) and
 * answers a fixed Selection / Booking / Released. Usage: {@code NoopServer <kind> [port]}; prints {@code PORT n}
 * once it listens on 127.0.0.1, and serves until its stdin closes or it is killed.
 */
public final class NoopServer {
  /** The servers of issue 4, cheapest-looking last. */
  enum Kind {
    PEKKO_GRPC("pekko-grpc", "Pekko gRPC stock handler"),
    NETTY_DEFAULT("netty-default", "grpc-java Netty, default executor"),
    NETTY_DIRECT("netty-direct", "grpc-java Netty, directExecutor()");

    final String key;
    final String label;

    Kind(String key, String label) {
      this.key = key;
      this.label = label;
    }

    static Kind of(String key) {
      for (Kind kind : values()) {
        if (kind.key.equals(key)) {
          return kind;
        }
      }
      throw new IllegalArgumentException("unknown no-op server " + key);
    }
  }

  private NoopServer() {}

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
    Kind kind = Kind.of(args[0]);
    int port = args.length > 1 ? Integer.parseInt(args[1]) : 0;
    Runnable stop;
    int bound;
    switch (kind) {
      case NETTY_DIRECT, NETTY_DEFAULT -> {
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(grpcJavaService());
        if (kind == Kind.NETTY_DIRECT) {
          builder.directExecutor();
        }
        Server server = builder.build().start();
        bound = server.getPort();
        stop = () -> {
          server.shutdownNow();
          try {
            server.awaitTermination(5, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        };
      }
      case PEKKO_GRPC -> {
        ActorSystem system = ActorSystem.create("noop", pekkoConfig());
        ServerBinding binding = Http.get(system).newServerAt("127.0.0.1", port)
            .bind(RouterPowerApiHandlerFactory.create(new NoopRouter(), system))
            .toCompletableFuture().get(30, TimeUnit.SECONDS);
        bound = binding.localAddress().getPort();
        stop = () -> system.terminate();
      }
      default -> throw new IllegalStateException();
    }
    System.out.println("PORT " + bound);
    System.out.flush();
    // serve until the bench closes our stdin (or kills us)
    while (System.in.read() >= 0) {
      // ignore input
    }
    stop.run();
    System.exit(0);
  }

  static Config pekkoConfig() {
    // not application.conf (that is the router's: cluster provider, ports); only what an HTTP/2 server needs
    return ConfigFactory.parseString("""
        pekko.loglevel = WARNING
        pekko.http.server.enable-http2 = on
        """)
        .withFallback(ConfigFactory.defaultReference()).resolve();
  }

  /** (a) Pekko gRPC's generated handler over this implementation: every call answers a completed stage. */
  static final class NoopRouter implements RouterPowerApi {
    private static final CompletionStage<Selection> SELECTION = CompletableFuture.completedFuture(Bodies.SELECTION);
    private static final CompletionStage<Booking> BOOKING = CompletableFuture.completedFuture(Bodies.BOOKING);
    private static final CompletionStage<Released> RELEASED = CompletableFuture.completedFuture(Bodies.RELEASED);

    @Override
    public CompletionStage<Selection> select(RouteRequest in, org.apache.pekko.grpc.javadsl.Metadata metadata) {
      return SELECTION;
    }

    @Override
    public CompletionStage<Booking> book(RouteRequest in, org.apache.pekko.grpc.javadsl.Metadata metadata) {
      return BOOKING;
    }

    @Override
    public CompletionStage<Released> release(BookingRef in, org.apache.pekko.grpc.javadsl.Metadata metadata) {
      return RELEASED;
    }

    @Override
    public CompletionStage<PrefillMarked> markPrefillDone(BookingRef in,
        org.apache.pekko.grpc.javadsl.Metadata metadata) {
      return CompletableFuture.completedFuture(PrefillMarked.newBuilder().setApplied(true).build());
    }

    @Override
    public CompletionStage<Renewed> renew(BookingRef in, org.apache.pekko.grpc.javadsl.Metadata metadata) {
      return CompletableFuture.completedFuture(Renewed.newBuilder().setApplied(true).build());
    }
  }

  /** (b), (c) grpc-java: a unary handler per method answering the fixed message once the request is decoded. */
  static ServerServiceDefinition grpcJavaService() {
    return ServerServiceDefinition.builder(RouterGrpc.SERVICE_NAME)
        .addMethod(RouterGrpc.getSelectMethod(), new Fixed<>(Bodies.SELECTION))
        .addMethod(RouterGrpc.getBookMethod(), new Fixed<>(Bodies.BOOKING))
        .addMethod(RouterGrpc.getReleaseMethod(), new Fixed<>(Bodies.RELEASED))
        .build();
  }

  static final class Fixed<Q, R> implements ServerCallHandler<Q, R> {
    private final R answer;

    Fixed(R answer) {
      this.answer = answer;
    }

    @Override
    public ServerCall.Listener<Q> startCall(ServerCall<Q, R> call, Metadata headers) {
      // two, as grpc-java's own unary handler does, to notice a client sending more than one message
      call.request(2);
      return new ServerCall.Listener<>() {
        private boolean received;

        @Override
        public void onMessage(Q message) {
          if (received) {
            call.close(Status.INTERNAL.withDescription("more than one request message"), new Metadata());
          }
          received = true;
        }

        @Override
        public void onHalfClose() {
          if (!received) {
            call.close(Status.INTERNAL.withDescription("no request message"), new Metadata());
            return;
          }
          call.sendHeaders(new Metadata());
          call.sendMessage(answer);
          call.close(Status.OK, new Metadata());
        }
      };
    }
  }
}
