package io.kvrouter.interop;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import io.grpc.Status;
import io.kvrouter.api.v1.Registered;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.interop.InteropClient.Call;
import io.kvrouter.interop.InteropClient.Reply;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/** The gRPC calls of the tests that launch router JVMs (RegionOfThreeJvmsTest, LocalClusterScriptTest). */
final class NodeCalls {
  static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

  private NodeCalls() {}

  static Reply call(InteropClient client, String service, String method, Message request,
      Message responsePrototype) {
    return client.call(new Call(service, method, request, responsePrototype, Map.of(), CALL_TIMEOUT));
  }

  /** Registers workers w1 and w2 (one rank each, endpoints http://wN:8000) of a model new to the cluster. */
  static void registerWorkers(InteropClient client, String model) {
    for (String worker : List.of("w1", "w2")) {
      Reply reply = call(client, "Workers", "Register", WorkerRegistration.newBuilder()
          .setModel(model)
          .setWorkerId(worker)
          .setDpSize(1)
          .setMaxNumBatchedTokens(8192)
          .setTotalKvBlocks(1000)
          .setBlockSize(16)
          .setEndpoint("http://" + worker + ":8000")
          .build(), Registered.getDefaultInstance());
      assertThat(reply.code()).as("Register %s: %s", worker, reply).isEqualTo(Status.Code.OK);
      assertThat(reply.response(Registered.class).getCreated()).isTrue();
    }
  }

  /** A 64-token prompt (four full blocks of 16). */
  static RouteRequest.Builder prompt(String model) {
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(model);
    IntStream.range(0, 64).forEach(i -> request.addTokenIds(1000 + i));
    return request;
  }
}
