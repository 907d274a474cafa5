package io.kvrouter.server.transport;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.MethodDescriptor;
import io.grpc.reflection.v1alpha.ServerReflectionGrpc;
import io.grpc.reflection.v1alpha.ServerReflectionRequest;
import io.grpc.reflection.v1alpha.ServerReflectionResponse;
import io.grpc.reflection.v1alpha.ServiceResponse;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A plain grpc-java client (not Pekko gRPC's): unary calls through the generated grpc-java method descriptors, so
 * tests can set call options such as compression or send raw bytes, and server reflection (v1alpha) through
 * grpc-services' stub.
 */
final class RawGrpc implements AutoCloseable {
  final ManagedChannel channel;

  RawGrpc(int port) {
    channel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  /** Messages as raw bytes, for requests no generated client would send. */
  static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };

  <Req, Resp> Resp call(MethodDescriptor<Req, Resp> method, CallOptions options, Req request) {
    return ClientCalls.blockingUnaryCall(channel, method,
        options.withDeadlineAfter(10, TimeUnit.SECONDS), request);
  }

  /** One reflection request on its own stream; the answers as the server sent them. */
  List<ServerReflectionResponse> reflect(ServerReflectionRequest request) throws Exception {
    CompletableFuture<List<ServerReflectionResponse>> done = new CompletableFuture<>();
    List<ServerReflectionResponse> responses = new ArrayList<>();
    StreamObserver<ServerReflectionRequest> requests = ServerReflectionGrpc.newStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .serverReflectionInfo(new StreamObserver<>() {
          @Override
          public void onNext(ServerReflectionResponse value) {
            responses.add(value);
          }

          @Override
          public void onError(Throwable t) {
            done.completeExceptionally(t);
          }

          @Override
          public void onCompleted() {
            done.complete(responses);
          }
        });
    requests.onNext(request);
    requests.onCompleted();
    return done.get(15, TimeUnit.SECONDS);
  }

  List<String> listServices() throws Exception {
    List<String> names = new ArrayList<>();
    for (ServerReflectionResponse response : reflect(ServerReflectionRequest.newBuilder().setListServices("").build())) {
      for (ServiceResponse service : response.getListServicesResponse().getServiceList()) {
        names.add(service.getName());
      }
    }
    return names;
  }

  List<FileDescriptorProto> filesContaining(String symbol) throws Exception {
    List<FileDescriptorProto> files = new ArrayList<>();
    for (ServerReflectionResponse response : reflect(ServerReflectionRequest.newBuilder()
        .setFileContainingSymbol(symbol).build())) {
      for (var bytes : response.getFileDescriptorResponse().getFileDescriptorProtoList()) {
        try {
          files.add(FileDescriptorProto.parseFrom(bytes));
        } catch (InvalidProtocolBufferException e) {
          throw new AssertionError(e);
        }
      }
    }
    return files;
  }

  @Override
  public void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }
}
