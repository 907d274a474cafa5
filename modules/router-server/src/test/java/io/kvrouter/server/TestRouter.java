package io.kvrouter.server;

import static org.awaitility.Awaitility.await;

import com.typesafe.config.ConfigFactory;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.AdminClient;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RouterClient;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkersClient;
import io.kvrouter.server.transport.Binding;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.Clock;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.grpc.GrpcClientSettings;

/** A router node on ephemeral loopback ports, every actor message serialized, with gRPC clients to it. */
public final class TestRouter implements AutoCloseable {
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  public final RouterNode node;
  public final RouterClient router;
  public final WorkersClient workers;
  public final AdminClient admin;

  private TestRouter(RouterNode node) {
    this.node = node;
    GrpcClientSettings settings = GrpcClientSettings
        .connectToServiceAt("127.0.0.1", node.grpcPort(), node.system())
        .withTls(false)
        .withDeadline(Duration.ofSeconds(10));
    this.router = RouterClient.create(settings, node.system());
    this.workers = WorkersClient.create(settings, node.system());
    this.admin = AdminClient.create(settings, node.system());
  }

  /** A node serving gRPC with {@code binding}. */
  public static TestRouter start(Binding binding, String config) {
    return start(binding, config, RouterCluster.AdmissionDecorator.NONE);
  }

  /** A node serving gRPC with {@code binding}, its admission actors wrapped by {@code admission}. */
  public static TestRouter start(Binding binding, String config, RouterCluster.AdmissionDecorator admission) {
    return start(config + "\nkvrouter.grpc.binding = \"" + binding.configName() + "\"\n", admission);
  }

  public static TestRouter start(Binding binding) {
    return start(binding, "");
  }

  /** A node with the configured default binding. */
  public static TestRouter start(String config) {
    return start(config, RouterCluster.AdmissionDecorator.NONE);
  }

  private static TestRouter start(String config, RouterCluster.AdmissionDecorator admission) {
    RouterNode node = Main.init(ConfigFactory.parseString(config + """

        kvrouter.grpc.port = 0
        kvrouter.management.port = 0
        kvrouter.front.port = 0
        kvrouter.epp.port = 0
        kvrouter.epp.health-port = 0
        pekko.remote.artery.canonical.port = 0
        pekko.actor.serialize-messages = on
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.loglevel = WARNING
        """), Clock.SYSTEM, admission);
    Cluster cluster = Cluster.get(node.system());
    await().atMost(Duration.ofSeconds(15)).until(() -> cluster.selfMember().status() == MemberStatus.up());
    return new TestRouter(node);
  }

  public static TestRouter start() {
    return start("");
  }

  public static WorkerRegistration.Builder worker(String model, String id) {
    return WorkerRegistration.newBuilder()
        .setModel(model)
        .setWorkerId(id)
        .setDpSize(1)
        .setMaxNumBatchedTokens(8192)
        .setTotalKvBlocks(1000)
        .setBlockSize(16)
        .setEndpoint("http://" + id + ":8000");
  }

  public ModelState state(String model) {
    return join(admin.getModelState(ModelStateRequest.newBuilder().setModel(model).build()));
  }

  public static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(15, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /** The gRPC failure of a call that must fail. */
  public static StatusRuntimeException failure(CompletionStage<?> stage) {
    try {
      stage.toCompletableFuture().get(15, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof StatusRuntimeException status) {
        return status;
      }
      throw new AssertionError("not a gRPC status", e.getCause());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    throw new AssertionError("the call succeeded");
  }

  public static String reason(StatusRuntimeException e) {
    return ReasonTrailer.of(e.getTrailers());
  }

  /** {@code GET path} on this node's management server (path with its query, already encoded). */
  public HttpResponse<String> managementGet(String path) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create(node.managementUrl() + path))
        .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  @Override
  public void close() {
    router.close();
    workers.close();
    admin.close();
    node.close();
  }
}
