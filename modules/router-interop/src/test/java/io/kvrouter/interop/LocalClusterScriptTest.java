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
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.BookingState;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.interop.InteropClient.Reply;
import java.io.IOException;
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
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * {@code deploy/local-cluster.sh} as a user runs it: {@code start} brings up three regions of three nodes (nine JVMs
 * through bin/kvrouter, over the classpath router-server's package wrote, so this runs in the reactor), the nodes form
 * one cluster of three data centers, and {@code stop} ends every process it started and frees every port. One
 * cluster start for the class; the stop test runs last, and whatever is left is killed when the class ends.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LocalClusterScriptTest {
  private static final List<String> REGIONS = List.of("eu-west", "us-east", "ap-south");
  private static final int PER_REGION = 3;
  private static final int NODES = REGIONS.size() * PER_REGION;
  /** The script's own bound is 240 s per wait; this bounds the whole start (four waves of JVMs, then membership). */
  private static final Duration SCRIPT_START_TIMEOUT = Duration.ofMinutes(15);
  private static final Duration SCRIPT_STOP_TIMEOUT = Duration.ofMinutes(3);
  private static final Duration VIEW_TIMEOUT = Duration.ofSeconds(30);

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final ObjectMapper json = new ObjectMapper();
  private final List<GrpcJavaClient> clients = new ArrayList<>();
  private final List<Long> pids = new ArrayList<>();
  private Path root;
  private Path dir;
  private int grpcBase;
  private int managementBase;
  private int remoteBase;
  private int httpBase;
  private int eppBase;
  private int eppHealthBase;
  private String startOutput;

  @BeforeAll
  void startCluster() throws Exception {
    root = Path.of(System.getProperty("kvrouter.interop.root", "../..")).toAbsolutePath().normalize();
    Path server = root.resolve("modules/router-server/target");
    // bin/kvrouter would build (mvn package) without them: this test runs in the reactor after router-server's package
    assertThat(server.resolve("classpath.txt")).as("router-server's launcher classpath; run through the reactor, e.g. "
        + "mvn -B -pl modules/router-interop -am verify").exists();
    dir = Path.of(System.getProperty("kvrouter.interop.log.dir", "target")).toAbsolutePath().resolve("local-cluster");
    Files.createDirectories(dir);
    int[] bases = freeRanges(6, NODES);
    grpcBase = bases[0];
    managementBase = bases[1];
    remoteBase = bases[2];
    httpBase = bases[3];
    eppBase = bases[4];
    eppHealthBase = bases[5];

    ScriptRun start = script("start", SCRIPT_START_TIMEOUT);
    startOutput = start.output();
    for (int n = 1; n <= NODES; n++) {
      Path pidFile = dir.resolve("node-" + n + ".pid");
      if (Files.exists(pidFile)) {
        pids.add(Long.parseLong(Files.readString(pidFile).strip()));
      }
    }
    assertThat(start.exitCode()).as("local-cluster.sh start (logs in %s):%n%s", dir, startOutput).isZero();
    assertThat(pids).hasSize(NODES);
    for (int n = 1; n <= NODES; n++) {
      clients.add(new GrpcJavaClient("127.0.0.1", grpcBase + n));
    }
  }

  @AfterAll
  void killWhateverIsLeft() throws Exception {
    clients.forEach(GrpcJavaClient::close);
    if (pids.stream().anyMatch(LocalClusterScriptTest::alive)) {
      script("stop", SCRIPT_STOP_TIMEOUT);
    }
    for (long pid : pids) {
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  @Test
  @Order(1)
  void everyNodeIsReadyAndSeesNineMembersUpInThreeRegions() throws Exception {
    for (int n = 1; n <= NODES; n++) {
      String region = REGIONS.get((n - 1) / PER_REGION);
      assertThat(startOutput).as("start lists node %d", n)
          .containsPattern("(?m)^" + n + " +" + region + " +\\d+ +127\\.0\\.0\\.1:" + (grpcBase + n)
              + " +http://127\\.0\\.0\\.1:" + (managementBase + n) + " +127\\.0\\.0\\.1:" + (remoteBase + n)
              + " +http://127\\.0\\.0\\.1:" + (httpBase + n) + " +127\\.0\\.0\\.1:" + (eppBase + n)
              + " +200 +9 +3$");
      assertThat(get(managementUrl(n, "/ready")).statusCode()).as("node %d /ready", n).isEqualTo(200);
      JsonNode members = json.readTree(get(managementUrl(n, "/cluster/members")).body());
      Set<String> regions = new TreeSet<>();
      int up = 0;
      String self = members.path("selfNode").asText();
      String selfRegion = null;
      for (JsonNode member : members.path("members")) {
        up += "Up".equals(member.path("status").asText()) ? 1 : 0;
        for (JsonNode role : member.path("roles")) {
          if (role.asText().startsWith("dc-")) {
            regions.add(role.asText().substring(3));
            if (member.path("node").asText().equals(self)) {
              selfRegion = role.asText().substring(3);
            }
          }
        }
      }
      assertThat(up).as("members Up seen by node %d", n).isEqualTo(NODES);
      assertThat(regions).as("regions seen by node %d", n).containsExactlyInAnyOrderElementsOf(REGIONS);
      assertThat(selfRegion).as("node %d's region", n).isEqualTo(region);
    }
  }

  @Test
  @Order(2)
  void aModelRegisteredInOneRegionIsSelectableOnEveryNodeOfItsRegion() {
    String model = "cluster/regional";
    registerWorkers(client(1), model);
    for (int n = 1; n <= PER_REGION; n++) {
      Selection selection = awaitSelection(n, model, Scope.SCOPE_REGION);
      assertThat(selection.getWorker().getWorkerId()).as("Select through node %d", n).isIn("w1", "w2");
      assertThat(selection.getWorker().getRegion()).isEqualTo(REGIONS.get(0));
    }
  }

  /**
   * Global scope: a model registered in one region is selectable through every node of every region. Needs the
   * regions work (SCOPE_GLOBAL answered from other regions' pool summaries); until it lands, nodes of the other
   * regions answer as for SCOPE_REGION (NOT_FOUND UNKNOWN_MODEL) and this fails.
   */
  @Test
  @Order(3)
  void aModelRegisteredInOneRegionIsGloballySelectableFromAllNineNodes() {
    String model = "cluster/global";
    int home = PER_REGION + 1; // the first node of the second region
    registerWorkers(client(home), model);
    Set<String> homeEndpoints = new TreeSet<>();
    for (int n = home; n < home + PER_REGION; n++) {
      homeEndpoints.add("127.0.0.1:" + (grpcBase + n));
    }
    for (int n = 1; n <= NODES; n++) {
      Selection selection = awaitSelection(n, model, Scope.SCOPE_GLOBAL);
      assertThat(selection.getRegion()).as("global Select through node %d", n).isEqualTo(REGIONS.get(1));
      if (regionOf(n).equals(REGIONS.get(1))) {
        // the chosen pool is the node's own: it picks the worker inline
        assertThat(selection.getWorker().getWorkerId()).as("global Select through node %d", n).isIn("w1", "w2");
        assertThat(selection.getWorker().getRegion()).isEqualTo(REGIONS.get(1));
      } else {
        // another region's pool: the answer names it and where its routers listen, no worker
        assertThat(selection.hasWorker()).as("global Select through node %d", n).isFalse();
        assertThat(selection.getRouterEndpoint()).as("global Select through node %d", n).isIn(homeEndpoints);
      }
    }
  }

  @Test
  @Order(4)
  void aGlobalBookFromOneRegionBooksAnotherRegionsWorkerAndIsReleasedFromAThird() {
    String model = "cluster/global-book";
    int home = 2 * PER_REGION + 1; // the first node of the third region
    registerWorkers(client(home), model);
    awaitSelection(1, model, Scope.SCOPE_GLOBAL); // node 1 (first region) has the third region's summary
    Reply booked = call(client(1), "Router", "Book",
        prompt(model).setRequestId("global-1").setScope(Scope.SCOPE_GLOBAL).build(), Booking.getDefaultInstance());
    assertThat(booked.code()).as("global Book through node 1: %s", booked).isEqualTo(Status.Code.OK);
    Booking booking = booked.response(Booking.class);
    assertThat(booking.getRegion()).isEqualTo(REGIONS.get(2));
    assertThat(booking.getSelection().getWorker().getRegion()).isEqualTo(REGIONS.get(2));
    Reply state = call(client(home), "Admin", "GetModelState",
        ModelStateRequest.newBuilder().setModel(model).build(), ModelState.getDefaultInstance());
    assertThat(state.response(ModelState.class).getBookingsList()).extracting(BookingState::getRequestId)
        .containsExactly("global-1");

    // released through a node of the second region, with the booking's region
    Reply released = call(client(PER_REGION + 1), "Router", "Release", BookingRef.newBuilder().setModel(model)
        .setRequestId("global-1").setAttempt(booking.getAttempt()).setRegion(booking.getRegion()).build(),
        Released.getDefaultInstance());
    assertThat(released.code()).as("Release through node %d: %s", PER_REGION + 1, released)
        .isEqualTo(Status.Code.OK);
    assertThat(released.response(Released.class).getApplied()).isTrue();
    Reply after = call(client(home), "Admin", "GetModelState",
        ModelStateRequest.newBuilder().setModel(model).build(), ModelState.getDefaultInstance());
    assertThat(after.response(ModelState.class).getBookingsList()).isEmpty();
  }

  private static String regionOf(int node) {
    return REGIONS.get((node - 1) / PER_REGION);
  }

  @Test
  @Order(Integer.MAX_VALUE)
  void stopStopsEverythingItStarted() throws Exception {
    ScriptRun stop = script("stop", SCRIPT_STOP_TIMEOUT);
    assertThat(stop.exitCode()).as("local-cluster.sh stop:%n%s", stop.output()).isZero();
    for (long pid : pids) {
      assertThat(alive(pid)).as("process %d after stop", pid).isFalse();
    }
    try (var left = Files.list(dir)) {
      assertThat(left.filter(p -> p.toString().endsWith(".pid")).toList()).as("pid files").isEmpty();
    }
    for (int n = 1; n <= NODES; n++) {
      for (int port : new int[] {grpcBase + n, managementBase + n, remoteBase + n, httpBase + n, eppBase + n,
          eppHealthBase + n}) {
        assertThat(free(port)).as("port %d of node %d after stop", port, n).isTrue();
      }
    }
  }

  // --- the script

  private record ScriptRun(int exitCode, String output) {}

  private ScriptRun script(String command, Duration timeout) throws IOException, InterruptedException {
    Path output = dir.resolve("local-cluster-" + command + ".out");
    ProcessBuilder launch = new ProcessBuilder("bash", root.resolve("deploy/local-cluster.sh").toString(), command)
        .directory(root.toFile())
        .redirectErrorStream(true)
        .redirectOutput(output.toFile());
    Map<String, String> env = launch.environment();
    env.keySet().removeIf(name -> name.startsWith("KVROUTER_"));
    env.put("KVROUTER_LOCAL_DIR", dir.toString());
    env.put("KVROUTER_LOCAL_GRPC_BASE", Integer.toString(grpcBase));
    env.put("KVROUTER_LOCAL_MANAGEMENT_BASE", Integer.toString(managementBase));
    env.put("KVROUTER_LOCAL_REMOTE_BASE", Integer.toString(remoteBase));
    env.put("KVROUTER_LOCAL_HTTP_BASE", Integer.toString(httpBase));
    env.put("KVROUTER_LOCAL_EPP_BASE", Integer.toString(eppBase));
    env.put("KVROUTER_LOCAL_EPP_HEALTH_BASE", Integer.toString(eppHealthBase));
    Process process = launch.start();
    if (!process.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
      throw new AssertionError("local-cluster.sh " + command + " did not finish within " + timeout + ":\n"
          + Files.readString(output));
    }
    return new ScriptRun(process.exitValue(), Files.readString(output));
  }

  /**
   * {@code count} bases, each followed by {@code width} free loopback ports (base + 1 .. base + width), below the
   * ephemeral port range so that no other test's ephemeral ports land there meanwhile.
   */
  private static int[] freeRanges(int count, int width) {
    List<Integer> bases = new ArrayList<>();
    for (int attempt = 0; attempt < 200 && bases.size() < count; attempt++) {
      int base = ThreadLocalRandom.current().nextInt(200, 300) * 100;
      if (bases.contains(base)) {
        continue;
      }
      if (IntStream.rangeClosed(base + 1, base + width).allMatch(LocalClusterScriptTest::free)) {
        bases.add(base);
      }
    }
    assertThat(bases).as("free port ranges").hasSize(count);
    return bases.stream().mapToInt(Integer::intValue).toArray();
  }

  private static boolean free(int port) {
    try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }

  // --- calls

  private GrpcJavaClient client(int node) {
    return clients.get(node - 1);
  }

  private String managementUrl(int node, String path) {
    return "http://127.0.0.1:" + (managementBase + node) + path;
  }

  private HttpResponse<String> get(String url) throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** The node's answer to a Select once it is OK (its view of the model may lag the registration a little). */
  private Selection awaitSelection(int node, String model, Scope scope) {
    RouteRequest request = prompt(model).setScope(scope).build();
    Reply[] last = new Reply[1];
    try {
      await().atMost(VIEW_TIMEOUT).pollInterval(Duration.ofMillis(250)).until(() -> {
        last[0] = call(client(node), "Router", "Select", request, Selection.getDefaultInstance());
        return last[0].code() == Status.Code.OK;
      });
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw new AssertionError("Select " + scope + " of " + model + " through node " + node + " (region "
          + REGIONS.get((node - 1) / PER_REGION) + "): " + Optional.ofNullable(last[0]).map(Reply::toString)
          .orElse("no answer"), e);
    }
    return last[0].response(Selection.class);
  }
}
