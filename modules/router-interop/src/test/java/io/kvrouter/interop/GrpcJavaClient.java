package io.kvrouter.interop;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerRegistration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Plain grpc-java (Netty, shaded): a {@link ManagedChannel} and {@link ClientCalls}, with each
 * {@link MethodDescriptor} built from the protobuf file descriptors of proto/kvrouter/v1, not from any generated stub.
 */
final class GrpcJavaClient implements InteropClient {
  private static final Map<String, Descriptors.ServiceDescriptor> SERVICES = Map.of(
      "Router", RouteRequest.getDescriptor().getFile().findServiceByName("Router"),
      "Workers", WorkerRegistration.getDescriptor().getFile().findServiceByName("Workers"),
      "Admin", SetPolicyRequest.getDescriptor().getFile().findServiceByName("Admin"));

  private final ManagedChannel channel;

  GrpcJavaClient(String host, int port) {
    this.channel = Grpc.newChannelBuilderForAddress(host, port, InsecureChannelCredentials.create()).build();
  }

  @Override
  public String name() {
    return "grpc-java";
  }

  static MethodDescriptor<Message, Message> method(String service, String method, Message request,
      Message responsePrototype) {
    Descriptors.ServiceDescriptor serviceDescriptor = SERVICES.get(service);
    if (serviceDescriptor == null) {
      throw new IllegalArgumentException("unknown service " + service);
    }
    Descriptors.MethodDescriptor descriptor = serviceDescriptor.findMethodByName(method);
    if (descriptor == null) {
      throw new IllegalArgumentException("unknown method " + service + "." + method);
    }
    if (!descriptor.getInputType().equals(request.getDescriptorForType())
        || !descriptor.getOutputType().equals(responsePrototype.getDescriptorForType())) {
      throw new IllegalArgumentException(service + "." + method + " takes " + descriptor.getInputType().getFullName()
          + " and answers " + descriptor.getOutputType().getFullName());
    }
    return MethodDescriptor.<Message, Message>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(serviceDescriptor.getFullName(),
            descriptor.getName()))
        .setRequestMarshaller(ProtoUtils.marshaller(request.getDefaultInstanceForType()))
        .setResponseMarshaller(ProtoUtils.marshaller(responsePrototype.getDefaultInstanceForType()))
        .build();
  }

  @Override
  public Reply call(Call call) {
    Metadata headers = new Metadata();
    call.metadata().forEach((key, value) -> {
      if (key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
        headers.put(Metadata.Key.of(key, Metadata.BINARY_BYTE_MARSHALLER), Base64.getDecoder().decode(value));
      } else {
        headers.put(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER), value);
      }
    });
    AtomicReference<Metadata> responseHeaders = new AtomicReference<>();
    AtomicReference<Metadata> trailers = new AtomicReference<>();
    Channel intercepted = ClientInterceptors.intercept(channel,
        MetadataUtils.newAttachHeadersInterceptor(headers),
        MetadataUtils.newCaptureMetadataInterceptor(responseHeaders, trailers));
    CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(call.timeout().toMillis(), TimeUnit.MILLISECONDS);
    try {
      Message response = ClientCalls.blockingUnaryCall(intercepted,
          method(call.service(), call.method(), call.request(), call.responsePrototype()), options, call.request());
      return new Reply(io.grpc.Status.Code.OK, null, reason(trailers.get()), toMap(responseHeaders.get()),
          toMap(trailers.get()), response);
    } catch (StatusRuntimeException e) {
      Metadata t = e.getTrailers() != null ? e.getTrailers() : trailers.get();
      return new Reply(e.getStatus().getCode(), e.getStatus().getDescription(), reason(t),
          toMap(responseHeaders.get()), toMap(t), null);
    }
  }

  @Override
  public List<Reply> callTogether(List<Call> calls) {
    ExecutorService callers = Executors.newFixedThreadPool(calls.size());
    try {
      List<CompletableFuture<Reply>> replies = calls.stream()
          .map(call -> CompletableFuture.supplyAsync(() -> call(call), callers)).toList();
      return replies.stream().map(CompletableFuture::join).toList();
    } finally {
      callers.shutdownNow();
    }
  }

  private static String reason(Metadata trailers) {
    return ReasonTrailer.of(trailers);
  }

  private static Map<String, String> toMap(Metadata metadata) {
    Map<String, String> out = new TreeMap<>();
    if (metadata == null) {
      return out;
    }
    for (String key : metadata.keys()) {
      if (key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
        byte[] value = metadata.get(Metadata.Key.of(key, Metadata.BINARY_BYTE_MARSHALLER));
        out.put(key, value == null ? null : Base64.getEncoder().encodeToString(value));
      } else {
        out.put(key, metadata.get(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER)));
      }
    }
    return out;
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
