package io.kvrouter.bench.transport;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
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
import org.apache.pekko.http.javadsl.model.AttributeKeys;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.Trailer;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.japi.function.Function;
import org.apache.pekko.util.ByteString;

/**
 * A no-op kvrouter.v1.Router server in its own process: every variant decodes the RouteRequest (or BookingRef) and
 * answers a fixed Selection / Booking / Released. Usage: {@code NoopServer <kind> [port]}; prints {@code PORT n}
 * once it listens on 127.0.0.1, and serves until its stdin closes or it is killed.
 */
public final class NoopServer {
  /** The servers of issue 4, cheapest-looking last. */
  enum Kind {
    PEKKO_GRPC("pekko-grpc", "Pekko gRPC stock handler"),
    PEKKO_STRICT("pekko-strict", "pekko-http HTTP/2, strict unary handler"),
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
      case PEKKO_GRPC, PEKKO_STRICT -> {
        ActorSystem system = ActorSystem.create("noop", pekkoConfig(kind));
        Function<HttpRequest, CompletionStage<HttpResponse>> handler = kind == Kind.PEKKO_GRPC
            ? RouterPowerApiHandlerFactory.create(new NoopRouter(), system)
            : new StrictHandler(system);
        ServerBinding binding = Http.get(system).newServerAt("127.0.0.1", port).bind(handler)
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

  static Config pekkoConfig(Kind kind) {
    // not application.conf (that is the router's: cluster provider, ports); only what an HTTP/2 server needs
    return ConfigFactory.parseString("""
        pekko.loglevel = WARNING
        pekko.http.server.enable-http2 = on
        pekko.http.server.http2.min-collect-strict-entity-size = %d
        """.formatted(kind == Kind.PEKKO_STRICT ? 1 : 0))
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
    return ServerServiceDefinition.builder(GrpcMethods.SELECT.getServiceName())
        .addMethod(GrpcMethods.SELECT, new Fixed<>(Bodies.SELECTION))
        .addMethod(GrpcMethods.BOOK, new Fixed<>(Bodies.BOOKING))
        .addMethod(GrpcMethods.RELEASE, new Fixed<>(Bodies.RELEASED))
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

  /**
   * (d) A unary gRPC handler written directly on pekko-http's HTTP/2 server: the request entity is strict (the
   * server collects bodies that arrive in one DATA frame), the answer a strict entity with {@code grpc-status: 0}
   * as a trailer. Bodies that did not arrive strict are collected first.
   */
  static final class StrictHandler implements Function<HttpRequest, CompletionStage<HttpResponse>> {
    private static final ContentType GRPC = ContentTypes.create(
        MediaTypes.applicationBinary("grpc", false));
    private static final Trailer OK = Trailer.create().addHeader(RawHeader.create("grpc-status", "0"));
    private static final HttpResponse SELECTION = answer(Bodies.framed(Bodies.SELECTION));
    private static final HttpResponse BOOKING = answer(Bodies.framed(Bodies.BOOKING));
    private static final HttpResponse RELEASED = answer(Bodies.framed(Bodies.RELEASED));
    private static final CompletionStage<HttpResponse> NOT_FOUND =
        CompletableFuture.completedFuture(HttpResponse.create().withStatus(StatusCodes.NOT_FOUND));
    private static final String PREFIX = "/" + GrpcMethods.SELECT.getServiceName() + "/";

    private final ActorSystem system;

    StrictHandler(ActorSystem system) {
      this.system = system;
    }

    private static HttpResponse answer(byte[] framed) {
      return HttpResponse.create()
          .withEntity(HttpEntities.create(GRPC, ByteString.fromArrayUnsafe(framed)))
          .addAttribute(AttributeKeys.trailer, OK);
    }

    @Override
    public CompletionStage<HttpResponse> apply(HttpRequest request) {
      String path = request.getUri().path();
      if (!path.startsWith(PREFIX)) {
        return NOT_FOUND;
      }
      String method = path.substring(PREFIX.length());
      HttpEntity entity = request.entity();
      if (entity instanceof HttpEntity.Strict strict) {
        return CompletableFuture.completedFuture(handle(method, strict.getData()));
      }
      return entity.toStrict(5_000, system).thenApply(collected -> handle(method, collected.getData()));
    }

    private static HttpResponse handle(String method, ByteString data) {
      try {
        if (data.size() < 5 || data.apply(0) != 0) {
          return error("13", "expected one uncompressed message");
        }
        int length = ((data.apply(1) & 0xff) << 24) | ((data.apply(2) & 0xff) << 16)
            | ((data.apply(3) & 0xff) << 8) | (data.apply(4) & 0xff);
        if (length != data.size() - 5) {
          return error("13", "frame length " + length + " for " + (data.size() - 5) + " bytes");
        }
        byte[] bytes = data.toArrayUnsafe();
        switch (method) {
          case "Select" -> {
            RouteRequest.parser().parseFrom(bytes, 5, length);
            return SELECTION;
          }
          case "Book" -> {
            RouteRequest.parser().parseFrom(bytes, 5, length);
            return BOOKING;
          }
          case "Release" -> {
            BookingRef.parser().parseFrom(bytes, 5, length);
            return RELEASED;
          }
          default -> {
            return error("12", "unimplemented " + method);
          }
        }
      } catch (com.google.protobuf.InvalidProtocolBufferException e) {
        return error("13", "malformed request");
      }
    }

    private static HttpResponse error(String status, String message) {
      return HttpResponse.create()
          .withEntity(HttpEntities.create(GRPC, ByteString.emptyByteString()))
          .addAttribute(AttributeKeys.trailer, Trailer.create()
              .addHeader(RawHeader.create("grpc-status", status))
              .addHeader(RawHeader.create("grpc-message", message)));
    }
  }
}
