package io.kvrouter.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static io.kvrouter.interop.NodeCalls.call;
import static io.kvrouter.interop.NodeCalls.prompt;
import static io.kvrouter.interop.NodeCalls.registerWorkers;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Status;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.ModelList;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.interop.InteropClient.Reply;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Three router JVMs on 127.0.0.1 started as a user starts them: {@code bin/kvrouter} with environment variables only
 * (distinct ports, {@code KVROUTER_SEED_NODES} naming all three, the loopback failure-detection profile), over the
 * classpath the build wrote to router-server's {@code target/classpath.txt}. Called through plain grpc-java and the
 * management HTTP routes. Every process is killed when the class ends, whatever happened.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RegionOfThreeJvmsTest {
  private static final int NODES = 3;
  /** pekko.cluster.sharding.number-of-shards, typed sharding's default. */
  private static final int NUMBER_OF_SHARDS = 1000;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(20);

  /** One launched node: its process and ports. */
  private record Node(int number, Process process, int grpcPort, int managementPort, int remotePort, Path log) {
    String management(String path) {
      return "http://127.0.0.1:" + managementPort + path;
    }
  }

  private final List<Node> nodes = new ArrayList<>();
  private final List<GrpcJavaClient> clients = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final ObjectMapper json = new ObjectMapper();
  private Thread killOnExit;

  @BeforeAll
  void startRegion() throws IOException {
    Path root = Path.of(System.getProperty("kvrouter.interop.root", "../..")).toAbsolutePath().normalize();
    Path server = root.resolve("modules/router-server/target");
    // bin/kvrouter would build (mvn package) without them: this test runs in the reactor after router-server's package
    assertThat(server.resolve("classpath.txt")).as("router-server's launcher classpath; run through the reactor, e.g. "
        + "mvn -B verify or mvn -B -pl modules/router-interop -am verify").exists();
    assertThat(server.resolve("classes")).isDirectory();
    Path logs = Path.of(System.getProperty("kvrouter.interop.log.dir", "target")).resolve("region-of-three");
    Files.createDirectories(logs);

    // killed if the test JVM itself goes down before @AfterAll runs
    killOnExit = new Thread(() -> nodes.forEach(n -> kill(n.process())));
    Runtime.getRuntime().addShutdownHook(killOnExit);

    int[] ports = freePorts(3 * NODES);
    List<String> seeds = new ArrayList<>();
    for (int i = 0; i < NODES; i++) {
      seeds.add("127.0.0.1:" + ports[3 * i + 2]);
    }
    for (int i = 0; i < NODES; i++) {
      Path log = logs.resolve("node-" + (i + 1) + ".log");
      ProcessBuilder launch = new ProcessBuilder("bash", root.resolve("bin/kvrouter").toString())
          .directory(root.toFile())
          .redirectErrorStream(true)
          .redirectOutput(log.toFile());
      Map<String, String> env = launch.environment();
      env.keySet().removeIf(name -> name.startsWith("KVROUTER_"));
      env.put("KVROUTER_GRPC_HOST", "127.0.0.1");
      env.put("KVROUTER_GRPC_PORT", Integer.toString(ports[3 * i]));
      env.put("KVROUTER_MANAGEMENT_HOST", "127.0.0.1");
      env.put("KVROUTER_MANAGEMENT_PORT", Integer.toString(ports[3 * i + 1]));
      env.put("KVROUTER_HTTP_PORT", "0");
      env.put("KVROUTER_EPP_PORT", "0");
      env.put("KVROUTER_EPP_HEALTH_PORT", "0");
      env.put("KVROUTER_REMOTE_HOST", "127.0.0.1");
      env.put("KVROUTER_REMOTE_PORT", Integer.toString(ports[3 * i + 2]));
      env.put("KVROUTER_SEED_NODES", String.join(",", seeds));
      env.put("KVROUTER_FAILURE_PROFILE", "loopback");
      env.put("KVROUTER_JAVA_OPTS", "-Xmx256m");
      nodes.add(new Node(i + 1, launch.start(), ports[3 * i], ports[3 * i + 1], ports[3 * i + 2], log));
    }
    for (Node node : nodes) {
      clients.add(new GrpcJavaClient("127.0.0.1", node.grpcPort()));
    }
  }

  @AfterAll
  void stopRegion() {
    try {
      clients.forEach(GrpcJavaClient::close);
    } finally {
      // SIGTERM: each node leaves the cluster and its JVM exits; SIGKILL for whatever is left after the timeout
      nodes.forEach(n -> n.process().destroy());
      nodes.forEach(n -> {
        try {
          n.process().waitFor(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } finally {
          kill(n.process());
        }
      });
      if (killOnExit != null) {
        Runtime.getRuntime().removeShutdownHook(killOnExit);
      }
    }
  }

  @Test
  void threeLaunchedNodesFormOneRegionAndTheNodeHostingAModelServesIt() {
    awaitRegionUp();

    String model = "region/jvms-hosting";
    registerWorkers(client(1), model);
    Node host = hostOf(model);

    Booking booking = book(client(host.number()), model, "on-the-host");
    assertThat(booking.getSelection().getWorker().getWorkerId()).startsWith("w");
    assertThat(state(client(host.number()), model).getBookingsList()).singleElement()
        .satisfies(b -> assertThat(b.getRequestId()).isEqualTo("on-the-host"));
    assertThat(release(client(host.number()), model, "on-the-host", booking.getAttempt())).isTrue();
    assertThat(state(client(host.number()), model).getBookingsList()).isEmpty();
  }

  /**
   * Any node serves any model once the owner's replication reached it (milliseconds): Select and Book through nodes 2
   * and 3, Release through node 1.
   */
  @Test
  void everyNodeServesAModelRegisteredThroughAnother() {
    awaitRegionUp();

    String model = "region/jvms-any-node";
    registerWorkers(client(1), model);
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> java.util.stream.IntStream.rangeClosed(1, NODES).allMatch(
        node -> call(client(node), "Admin", "ListModels", ListModelsRequest.getDefaultInstance(),
            ModelList.getDefaultInstance()).response(ModelList.class).getModelsList().contains(model)));

    for (int node : new int[] {2, 3}) {
      Selection selection = call(client(node), "Router", "Select", prompt(model).build(),
          Selection.getDefaultInstance()).response(Selection.class);
      assertThat(selection.getWorker().getWorkerId()).as("Select through node %d", node).startsWith("w");
    }
    Booking viaTwo = book(client(2), model, "via-node-2");
    Booking viaThree = book(client(3), model, "via-node-3");
    Set<String> live = new TreeSet<>();
    state(client(1), model).getBookingsList().forEach(b -> live.add(b.getRequestId()));
    assertThat(live).containsExactly("via-node-2", "via-node-3");

    assertThat(release(client(1), model, "via-node-2", viaTwo.getAttempt())).isTrue();
    assertThat(release(client(1), model, "via-node-3", viaThree.getAttempt())).isTrue();
    for (int node = 1; node <= NODES; node++) {
      assertThat(state(client(node), model).getBookingsList()).as("bookings seen from node %d", node).isEmpty();
    }
  }

  // --- the region

  private void awaitRegionUp() {
    for (Node node : nodes) {
      await("node " + node.number() + " ready (log " + node.log() + ")")
          .atMost(START_TIMEOUT)
          .pollInterval(Duration.ofMillis(250))
          .until(() -> {
            assertThat(node.process().isAlive()).as("node %d's process (log %s)", node.number(), node.log()).isTrue();
            return status(node.management("/ready")) == 200;
          });
      await("node " + node.number() + " sees " + NODES + " members Up")
          .atMost(START_TIMEOUT)
          .pollInterval(Duration.ofMillis(250))
          .until(() -> membersUp(node) == NODES);
    }
  }

  private long membersUp(Node node) throws IOException, InterruptedException {
    JsonNode members = json.readTree(get(node.management("/cluster/members")).body()).path("members");
    long up = 0;
    for (JsonNode member : members) {
      if ("Up".equals(member.path("status").asText())) {
        up++;
      }
    }
    return up;
  }

  /**
   * The node whose shard region runs the model's admission actor: the management route lists each region's shards,
   * and a model's shard is its entity id's hash modulo the number of shards (Pekko's default message extractor).
   */
  private Node hostOf(String model) {
    String shard = Integer.toString(Math.abs(model.hashCode() % NUMBER_OF_SHARDS));
    List<Node> hosts = new ArrayList<>();
    for (Node node : nodes) {
      try {
        for (JsonNode region : json.readTree(get(node.management("/cluster/shards/ModelAdmission")).body())
            .path("regions")) {
          if (shard.equals(region.path("shardId").asText()) && region.path("numEntities").asInt() > 0) {
            hosts.add(node);
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    assertThat(hosts).as("nodes hosting shard %s of %s", shard, model).hasSize(1);
    return hosts.get(0);
  }

  private int status(String url) {
    try {
      return get(url).statusCode();
    } catch (IOException e) {
      return -1; // not listening yet
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  private HttpResponse<String> get(String url) throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(2)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static int[] freePorts(int count) throws IOException {
    List<ServerSocket> sockets = new ArrayList<>();
    try {
      for (int i = 0; i < count; i++) {
        sockets.add(new ServerSocket(0, 1, InetAddress.getLoopbackAddress()));
      }
      return sockets.stream().mapToInt(ServerSocket::getLocalPort).toArray();
    } finally {
      for (ServerSocket socket : sockets) {
        socket.close();
      }
    }
  }

  private static void kill(Process process) {
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
  }

  // --- gRPC calls

  private GrpcJavaClient client(int node) {
    return clients.get(node - 1);
  }

  private static Booking book(InteropClient client, String model, String requestId) {
    Reply reply = call(client, "Router", "Book", prompt(model).setRequestId(requestId).build(),
        Booking.getDefaultInstance());
    assertThat(reply.code()).as("Book %s: %s", requestId, reply).isEqualTo(Status.Code.OK);
    Booking booking = reply.response(Booking.class);
    assertThat(booking.getRequestId()).isEqualTo(requestId);
    assertThat(booking.getReplay()).isFalse();
    return booking;
  }

  private static boolean release(InteropClient client, String model, String requestId, long attempt) {
    return call(client, "Router", "Release", BookingRef.newBuilder().setModel(model).setRequestId(requestId)
        .setAttempt(attempt).build(), Released.getDefaultInstance()).response(Released.class).getApplied();
  }

  private static ModelState state(InteropClient client, String model) {
    return call(client, "Admin", "GetModelState", ModelStateRequest.newBuilder().setModel(model).build(),
        ModelState.getDefaultInstance()).response(ModelState.class);
  }
}
