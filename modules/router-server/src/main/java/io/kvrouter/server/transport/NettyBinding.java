package io.kvrouter.server.transport;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap;
import io.grpc.protobuf.ProtoFileDescriptorSupplier;
import io.grpc.protobuf.ProtoMethodDescriptorSupplier;
import io.grpc.protobuf.ProtoServiceDescriptorSupplier;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.protobuf.services.ProtoReflectionService;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.kvrouter.api.health.v1.Health;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthCheckResponse;
import io.kvrouter.server.grpc.GrpcErrors;
import io.kvrouter.server.grpc.HealthService;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.grpc.ServiceDescription;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NETTY binding: grpc-java's Netty server with a direct executor (no handler blocks: Select answers inline, the
 * rest complete from the admission actor's reply) serving the same service objects as the other bindings, with
 * method descriptors built from the generated protobuf descriptors, each carrying its schema so grpc-java's server
 * reflection (v1 and v1alpha) can describe them. Health is our {@link HealthService} under its wire name; grpc-services'
 * own health service is never registered (its classes share our health.proto's file name).
 *
 * <p>Request size: grpc-java's own limit is set to a hard cap above {@code kvrouter.grpc.max-message-bytes}, and the
 * request marshaller enforces the configured limit, so an over-limit request is answered by our code with
 * RESOURCE_EXHAUSTED and the MESSAGE_TOO_LARGE reason, after the body was read whole, as on the Pekko bindings
 * (grpc-java's own rejection carries no trailers of ours).
 */
final class NettyBinding {
  private static final Logger log = LoggerFactory.getLogger(NettyBinding.class);
  private static final Duration DRAIN = Duration.ofSeconds(3);

  private final ActorSystem<?> system;
  private final GrpcServices services;
  private final long limit;
  private final Materializer materializer;
  /** With {@code kvrouter.grpc.select-hop = on}, a Select is handed once to the default dispatcher before the pick. */
  private final Executor selectHop;

  private NettyBinding(ActorSystem<?> system, GrpcServices services, long limit) {
    this.system = system;
    this.services = services;
    this.limit = limit;
    this.selectHop = system.settings().config().getBoolean("kvrouter.grpc.select-hop")
        ? system.executionContext() : null;
    this.materializer = Materializer.matFromSystem(system);
  }

  /** Starts the server and stops it on the actor system's CoordinatedShutdown. */
  static InetSocketAddress start(ActorSystem<?> system, GrpcServices services, String host, int port,
      long maxMessageBytes, long hardLimitBytes) {
    NettyBinding binding = new NettyBinding(system, services, maxMessageBytes);
    NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
        .directExecutor()
        .maxInboundMessageSize((int) Math.min(Integer.MAX_VALUE, Math.max(hardLimitBytes, maxMessageBytes + 1)));
    for (ServerServiceDefinition service : binding.definitions()) {
      builder.addService(service);
    }
    builder.addService(ProtoReflectionServiceV1.newInstance());
    builder.addService(reflectionV1Alpha());
    Server server;
    try {
      server = builder.build().start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot bind gRPC (netty) to " + host + ":" + port, e);
    }
    binding.stopOnShutdown(server);
    return (InetSocketAddress) server.getListenSockets().get(0);
  }

  @SuppressWarnings("deprecation")
  private static io.grpc.BindableService reflectionV1Alpha() {
    // grpcurl and older tools still ask v1alpha
    return ProtoReflectionService.newInstance();
  }

  private void stopOnShutdown(Server server) {
    CoordinatedShutdown shutdown = CoordinatedShutdown.get(system);
    shutdown.addTask(CoordinatedShutdown.PhaseServiceUnbind(), "kvrouter-grpc-netty-unbind", () -> {
      server.shutdown();
      return CompletableFuture.completedFuture(Done.getInstance());
    });
    Executor blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    shutdown.addTask(CoordinatedShutdown.PhaseServiceRequestsDone(), "kvrouter-grpc-netty-drain",
        () -> CompletableFuture.supplyAsync(() -> {
          try {
            if (!server.awaitTermination(DRAIN.toMillis(), TimeUnit.MILLISECONDS)) {
              server.shutdownNow();
              server.awaitTermination(1, TimeUnit.SECONDS);
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            server.shutdownNow();
          }
          return Done.getInstance();
        }, blocking));
  }

  List<ServerServiceDefinition> definitions() {
    List<ServerServiceDefinition> definitions = new ArrayList<>();
    for (ServiceDescription description : GrpcServices.KVROUTER) {
      Descriptors.ServiceDescriptor schema = GrpcServices.descriptor(description);
      List<ServerMethodDefinition<?, ?>> methods = new ArrayList<>();
      for (UnaryMethod<?, ?> method : services.unaryMethods()) {
        if (method.service().equals(description.name())) {
          methods.add(unary(method, schema));
        }
      }
      definitions.add(service(description.name(), schema, methods));
    }
    definitions.add(health(services.health()));
    return definitions;
  }

  private static ServerServiceDefinition service(String name, Descriptors.ServiceDescriptor schema,
      List<ServerMethodDefinition<?, ?>> methods) {
    ServiceDescriptor.Builder descriptor = ServiceDescriptor.newBuilder(name).setSchemaDescriptor(new ServiceSchema(schema));
    for (ServerMethodDefinition<?, ?> method : methods) {
      descriptor.addMethod(method.getMethodDescriptor());
    }
    ServerServiceDefinition.Builder definition = ServerServiceDefinition.builder(descriptor.build());
    for (ServerMethodDefinition<?, ?> method : methods) {
      definition.addMethod(method);
    }
    return definition.build();
  }

  private <Req extends Message, Resp extends Message> ServerMethodDefinition<Inbound<Req>, Resp> unary(
      UnaryMethod<Req, Resp> method, Descriptors.ServiceDescriptor schema) {
    MethodDescriptor<Inbound<Req>, Resp> descriptor = MethodDescriptor.<Inbound<Req>, Resp>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(method.service(), method.method()))
        .setRequestMarshaller(new LimitedMarshaller<>(ProtoUtils.marshaller(method.requestPrototype()), limit))
        .setResponseMarshaller(ProtoUtils.marshaller(method.responsePrototype()))
        .setSchemaDescriptor(new MethodSchema(schema, method.method()))
        .build();
    boolean hop = selectHop != null && method.service().equals(io.kvrouter.api.v1.Router.name) && method.method().equals("Select");
    return ServerMethodDefinition.create(descriptor, ServerCalls.asyncUnaryCall((in, observer) -> {
      if (hop) {
        // the Dynamo PR's yield: measured against answering on the transport thread (router-bench, transport)
        selectHop.execute(() -> handle(method, in, observer));
      } else {
        handle(method, in, observer);
      }
    }));
  }

  private <Req extends Message, Resp extends Message> void handle(UnaryMethod<Req, Resp> method, Inbound<Req> in,
      io.grpc.stub.StreamObserver<Resp> observer) {
    ServerCallStreamObserver<Resp> call = (ServerCallStreamObserver<Resp>) observer;
    if (in.message() == null) {
      reply(call, null, GrpcErrors.messageTooLarge(limit).toException());
      return;
    }
    CompletionStage<Resp> answer;
    try {
      // the deadline comes from the call's Context, on the transport thread (Select, the only hopped call, reads none)
      answer = method.call().apply(in.message(), method.readsDeadline() ? remaining() : null);
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    complete(call, answer.toCompletableFuture());
  }

  /**
   * Answers when the stage completes. A call cancelled first (by the client, or by grpc-java at the deadline)
   * cancels the stage: for Book the facade then sends CancelBook for whatever it booked.
   */
  private <Resp> void complete(ServerCallStreamObserver<Resp> call, CompletableFuture<Resp> answer) {
    if (!answer.isDone()) {
      call.setOnCancelHandler(() -> answer.cancel(false));
    }
    // An answer completed elsewhere (the admission actor's thread) is encoded and written on the call's own event
    // loop: the actor's thread is free for its next command sooner, and netty writes from its own thread directly.
    // One already complete (Select) is answered right here.
    EventExecutor loop = ThreadExecutorMap.currentExecutor();
    answer.whenComplete((response, failure) -> {
      if (loop == null || loop.inEventLoop()) {
        reply(call, response, failure);
      } else {
        loop.execute(() -> reply(call, response, failure));
      }
    });
  }

  private <Resp> void reply(ServerCallStreamObserver<Resp> call, Resp response, Throwable failure) {
    if (call.isCancelled()) {
      return;
    }
    try {
      if (failure == null) {
        call.onNext(response);
        call.onCompleted();
      } else {
        call.onError(GrpcErrors.toStatusException(failure, system.classicSystem()));
      }
    } catch (RuntimeException e) {
      log.debug("gRPC call ended before its answer", e);
    }
  }

  /** The caller's remaining deadline as grpc-java parsed it from {@code grpc-timeout}; null without one. */
  private static Duration remaining() {
    Deadline deadline = Context.current().getDeadline();
    return deadline == null ? null : Duration.ofNanos(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)));
  }

  private ServerServiceDefinition health(HealthService health) {
    Descriptors.ServiceDescriptor schema = GrpcServices.descriptor(Health.description);
    MethodDescriptor.Marshaller<HealthCheckRequest> request =
        ProtoUtils.marshaller(HealthCheckRequest.getDefaultInstance());
    MethodDescriptor.Marshaller<HealthCheckResponse> response =
        ProtoUtils.marshaller(HealthCheckResponse.getDefaultInstance());
    MethodDescriptor<HealthCheckRequest, HealthCheckResponse> check =
        MethodDescriptor.<HealthCheckRequest, HealthCheckResponse>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(Health.name, "Check"))
            .setRequestMarshaller(request).setResponseMarshaller(response)
            .setSchemaDescriptor(new MethodSchema(schema, "Check"))
            .build();
    MethodDescriptor<HealthCheckRequest, HealthCheckResponse> watch =
        MethodDescriptor.<HealthCheckRequest, HealthCheckResponse>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(Health.name, "Watch"))
            .setRequestMarshaller(request).setResponseMarshaller(response)
            .setSchemaDescriptor(new MethodSchema(schema, "Watch"))
            .build();
    return service(Health.name, schema, List.of(
        ServerMethodDefinition.create(check, ServerCalls.asyncUnaryCall((in, observer) ->
            complete((ServerCallStreamObserver<HealthCheckResponse>) observer,
                health.check(in).toCompletableFuture()))),
        ServerMethodDefinition.create(watch, ServerCalls.asyncServerStreamingCall((in, observer) ->
            watch(health, in, observer)))));
  }

  /** Runs the same status stream as the stock binding into the call, until the client goes away. */
  private void watch(HealthService health, HealthCheckRequest in, StreamObserver<HealthCheckResponse> observer) {
    ServerCallStreamObserver<HealthCheckResponse> call = (ServerCallStreamObserver<HealthCheckResponse>) observer;
    SharedKillSwitch stop = KillSwitches.shared("kvrouter-health-watch");
    call.setOnCancelHandler(stop::shutdown);
    health.watch(in).via(stop.flow())
        .runWith(Sink.foreach(call::onNext), materializer)
        .whenComplete((done, failure) -> {
          if (call.isCancelled()) {
            return;
          }
          if (failure == null) {
            call.onCompleted();
          } else {
            call.onError(GrpcErrors.toStatusException(failure, system.classicSystem()));
          }
        });
  }

  /** A request message, or (message null) the size of one over the limit. */
  record Inbound<T>(T message, long size) {}

  /**
   * Parses requests up to the limit; a larger one becomes an {@link Inbound} without message, which the handler
   * answers with MESSAGE_TOO_LARGE. Compressed messages arrive without a known length: at most limit + 1 bytes of
   * them are read.
   */
  static final class LimitedMarshaller<T> implements MethodDescriptor.Marshaller<Inbound<T>> {
    private final MethodDescriptor.Marshaller<T> delegate;
    private final long limit;

    LimitedMarshaller(MethodDescriptor.Marshaller<T> delegate, long limit) {
      this.delegate = delegate;
      this.limit = limit;
    }

    @Override
    public InputStream stream(Inbound<T> value) {
      return delegate.stream(value.message());
    }

    @Override
    public Inbound<T> parse(InputStream stream) {
      try {
        if (stream instanceof KnownLength) {
          int size = stream.available();
          return size > limit ? new Inbound<>(null, size) : new Inbound<>(delegate.parse(stream), size);
        }
        byte[] bytes = stream.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, limit + 1));
        return bytes.length > limit ? new Inbound<>(null, bytes.length)
            : new Inbound<>(delegate.parse(new ByteArrayInputStream(bytes)), bytes.length);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private static class ServiceSchema implements ProtoFileDescriptorSupplier, ProtoServiceDescriptorSupplier {
    final Descriptors.ServiceDescriptor service;

    ServiceSchema(Descriptors.ServiceDescriptor service) {
      this.service = service;
    }

    @Override
    public Descriptors.FileDescriptor getFileDescriptor() {
      return service.getFile();
    }

    @Override
    public Descriptors.ServiceDescriptor getServiceDescriptor() {
      return service;
    }
  }

  private static final class MethodSchema extends ServiceSchema implements ProtoMethodDescriptorSupplier {
    private final String method;

    MethodSchema(Descriptors.ServiceDescriptor service, String method) {
      super(service);
      this.method = method;
    }

    @Override
    public Descriptors.MethodDescriptor getMethodDescriptor() {
      return service.findMethodByName(method);
    }
  }
}
