package io.kvrouter.interop;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigResolveOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The deployment files agree with the router they deploy: the Kubernetes manifests (deploy/kubernetes) name only
 * environment variables router-server's configuration reads, probe the management health routes on the management
 * port, bootstrap one cluster through the pods' common label, and may list pods; the InferencePool of deploy/gateway
 * names a Service on a region's picker port; the Dockerfile copies what the build produces, exposes the router's
 * default ports and runs its Main. Runs after router-server's package (in the reactor).
 */
class DeploymentManifestsTest {
  private static final Path ROOT = Path.of(System.getProperty("kvrouter.interop.root", "../..")).toAbsolutePath()
      .normalize();
  private static final Path SERVER = ROOT.resolve("modules/router-server");
  /** {@code ${?KVROUTER_X}} in the *.conf files (HOCON), {@code ${KVROUTER_X:-default}} in logback.xml. */
  private static final Pattern VARIABLE = Pattern.compile("\\$\\{\\??(KVROUTER_[A-Z0-9_]+)(:-[^}]*)?}");
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  /** application.conf as router-server ships it: defaults only, no environment. */
  private static final Config DEFAULTS = ConfigFactory.parseResourcesAnySyntax("application")
      .withFallback(ConfigFactory.defaultReference())
      .resolve(ConfigResolveOptions.noSystem());

  // --- Kubernetes

  @Test
  void everyKvrouterVariableInTheManifestsIsOneTheRouterReads() throws IOException {
    Set<String> read = variablesTheRouterReads();
    assertThat(read)
        .contains("KVROUTER_BOOTSTRAP", "KVROUTER_MANAGEMENT_PORT", "KVROUTER_REGION", "KVROUTER_LOG_FORMAT",
            "KVROUTER_HTTP_HOST", "KVROUTER_HTTP_PORT", "KVROUTER_MODELS", "KVROUTER_EPP_HOST", "KVROUTER_EPP_PORT",
            "KVROUTER_EPP_HEALTH_PORT")
        .doesNotContain("KVROUTER_JAVA_OPTS");
    for (JsonNode deployment : kind("Deployment")) {
      for (String name : env(deployment).keySet()) {
        if (name.startsWith("KVROUTER_")) {
          assertThat(read).as("%s in %s: read by router-server's configuration", name, name(deployment))
              .contains(name);
        }
      }
    }
  }

  @Test
  void atLeastTwoRegionsOfThreeReplicasEachBootstrappingOneCluster() throws IOException {
    List<JsonNode> deployments = kind("Deployment");
    Set<String> regions = new TreeSet<>();
    for (JsonNode deployment : deployments) {
      Map<String, String> env = env(deployment);
      assertThat(deployment.at("/spec/replicas").asInt()).as("replicas of %s", name(deployment))
          .isGreaterThanOrEqualTo(3);
      regions.add(env.get("KVROUTER_REGION"));
      assertThat(env).as(name(deployment)).containsEntry("KVROUTER_BOOTSTRAP", "kubernetes")
          .doesNotContainKey("KVROUTER_SEED_NODES");
      assertThat(Integer.parseInt(setting(env, "KVROUTER_BOOTSTRAP_REQUIRED_CONTACT_POINTS",
          "pekko.management.cluster.bootstrap.contact-point-discovery.required-contact-point-nr")))
          .as("required contact points of %s", name(deployment)).isGreaterThanOrEqualTo(3);
    }
    assertThat(regions).as("regions").hasSizeGreaterThanOrEqualTo(2).doesNotContainNull();
    assertThat(regions).hasSameSizeAs(deployments);
  }

  @Test
  void bootstrapDiscoversThePodsOfEveryRegionThroughTheirCommonLabel() throws IOException {
    for (JsonNode deployment : kind("Deployment")) {
      Map<String, String> env = env(deployment);
      String service = setting(env, "KVROUTER_BOOTSTRAP_SERVICE_NAME",
          "pekko.management.cluster.bootstrap.contact-point-discovery.service-name");
      String selector = setting(env, "KVROUTER_BOOTSTRAP_POD_LABEL_SELECTOR",
          "pekko.discovery.kubernetes-api.pod-label-selector").replace("%s", service);
      Map<String, String> labels = labels(deployment.at("/spec/template/metadata/labels"));
      for (String requirement : selector.split(",")) {
        String[] keyValue = requirement.split("=", 2);
        assertThat(labels).as("pod labels of %s against bootstrap's selector %s", name(deployment), selector)
            .containsEntry(keyValue[0].strip(), keyValue[1].strip());
      }
      // the Deployment's own selector picks its region's pods only
      assertThat(labels).containsAllEntriesOf(labels(deployment.at("/spec/selector/matchLabels")))
          .containsEntry("region", env.get("KVROUTER_REGION"));
    }
  }

  @Test
  void probesAskTheManagementHealthRoutesOnTheManagementPort() throws IOException {
    for (JsonNode deployment : kind("Deployment")) {
      JsonNode container = container(deployment);
      Map<String, String> env = env(deployment);
      int management = Integer.parseInt(setting(env, "KVROUTER_MANAGEMENT_PORT", "kvrouter.management.port"));
      assertThat(container.at("/readinessProbe/httpGet/path").asText()).isEqualTo("/ready");
      assertThat(container.at("/livenessProbe/httpGet/path").asText()).isEqualTo("/alive");
      for (String probe : List.of("readinessProbe", "livenessProbe", "startupProbe")) {
        JsonNode port = container.path(probe).at("/httpGet/port");
        if (!container.path(probe).isMissingNode()) {
          assertThat(containerPort(container, port)).as("%s port of %s", probe, name(deployment))
              .isEqualTo(management);
        }
      }
      assertThat(containerPort(container, YAML.valueToTree("grpc"))).isEqualTo(
          Integer.parseInt(setting(env, "KVROUTER_GRPC_PORT", "kvrouter.grpc.port")));
      assertThat(containerPort(container, YAML.valueToTree("remoting"))).isEqualTo(
          Integer.parseInt(setting(env, "KVROUTER_REMOTE_PORT", "pekko.remote.artery.canonical.port")));
      assertThat(containerPort(container, YAML.valueToTree("http"))).isEqualTo(
          Integer.parseInt(setting(env, "KVROUTER_HTTP_PORT", "kvrouter.front.port")));
      assertThat(containerPort(container, YAML.valueToTree("epp"))).isEqualTo(
          Integer.parseInt(setting(env, "KVROUTER_EPP_PORT", "kvrouter.epp.port")));
      assertThat(containerPort(container, YAML.valueToTree("epp-health"))).isEqualTo(
          Integer.parseInt(setting(env, "KVROUTER_EPP_HEALTH_PORT", "kvrouter.epp.health-port")));
    }
  }

  @Test
  void managementAndRemotingBindEveryInterfaceAndAdvertiseThePodAddress() throws IOException {
    for (JsonNode deployment : kind("Deployment")) {
      Map<String, String> env = env(deployment);
      JsonNode podIp = envEntry(deployment, "POD_IP");
      assertThat(podIp.at("/valueFrom/fieldRef/fieldPath").asText()).isEqualTo("status.podIP");
      assertThat(env).as(name(deployment))
          .containsEntry("KVROUTER_MANAGEMENT_HOST", "$(POD_IP)")
          .containsEntry("KVROUTER_MANAGEMENT_BIND_HOST", "0.0.0.0")
          .containsEntry("KVROUTER_REMOTE_HOST", "$(POD_IP)")
          .containsEntry("KVROUTER_REMOTE_BIND_HOST", "0.0.0.0")
          .containsEntry("KVROUTER_GRPC_HOST", "0.0.0.0")
          .containsEntry("KVROUTER_HTTP_HOST", "0.0.0.0")
          .containsEntry("KVROUTER_EPP_HOST", "0.0.0.0");
    }
  }

  @Test
  void thePodsServiceAccountMayListPods() throws IOException {
    for (JsonNode deployment : kind("Deployment")) {
      String account = deployment.at("/spec/template/spec/serviceAccountName").asText();
      String namespace = deployment.at("/metadata/namespace").asText();
      assertThat(kind("ServiceAccount")).as("service account %s", account)
          .anyMatch(a -> name(a).equals(account) && namespace(a).equals(namespace));
      List<String> roles = new ArrayList<>();
      for (JsonNode binding : kind("RoleBinding")) {
        for (JsonNode subject : binding.path("subjects")) {
          if (subject.path("kind").asText().equals("ServiceAccount") && subject.path("name").asText().equals(account)
              && namespace(binding).equals(namespace)) {
            roles.add(binding.at("/roleRef/name").asText());
          }
        }
      }
      assertThat(kind("Role")).as("a Role bound to %s that lists pods", account).anyMatch(role ->
          roles.contains(name(role)) && namespace(role).equals(namespace) && grantsPodListing(role));
    }
  }

  @Test
  void eachRegionHasAServiceSelectingItsPodsForGrpcAndTheHttpFront() throws IOException {
    for (JsonNode deployment : kind("Deployment")) {
      Map<String, String> labels = labels(deployment.at("/spec/template/metadata/labels"));
      JsonNode container = container(deployment);
      assertThat(kind("Service")).as("a Service for %s's gRPC port", name(deployment)).anyMatch(service -> {
        Map<String, String> selector = labels(service.at("/spec/selector"));
        boolean selectsRegion = !selector.isEmpty()
            && selector.equals(labels(deployment.at("/spec/selector/matchLabels")))
            && labels.entrySet().containsAll(selector.entrySet());
        boolean targetsGrpc = false;
        boolean targetsHttp = false;
        for (JsonNode port : service.at("/spec/ports")) {
          targetsGrpc |= containerPort(container, port.path("targetPort")) == containerPort(container,
              YAML.valueToTree("grpc"));
          targetsHttp |= containerPort(container, port.path("targetPort")) == containerPort(container,
              YAML.valueToTree("http"));
        }
        return selectsRegion && targetsGrpc && targetsHttp;
      });
    }
  }

  @Test
  void theInferencePoolsPickerIsAServiceOnARegionsPickerPort() throws IOException {
    List<JsonNode> gateway = documents(ROOT.resolve("deploy/gateway"));
    List<JsonNode> pools = gateway.stream().filter(d -> d.path("kind").asText().equals("InferencePool")).toList();
    assertThat(pools).as("InferencePools in deploy/gateway").isNotEmpty();
    for (JsonNode pool : pools) {
      JsonNode ref = pool.at("/spec/endpointPickerRef");
      assertThat(ref.path("kind").asText("Service")).isEqualTo("Service");
      JsonNode service = gateway.stream().filter(d -> d.path("kind").asText().equals("Service")
          && name(d).equals(ref.path("name").asText()) && namespace(d).equals(namespace(pool))).findFirst()
          .orElseThrow(() -> new AssertionError("no Service " + ref.path("name").asText() + " beside " + name(pool)));
      JsonNode port = null;
      for (JsonNode p : service.at("/spec/ports")) {
        if (p.path("port").asInt() == ref.at("/port/number").asInt()) {
          port = p;
        }
      }
      assertThat(port).as("the Service port %s the pool names", ref.at("/port/number")).isNotNull();
      // the Service selects one region's router pods and targets their picker port (and the health port)
      Map<String, String> selector = labels(service.at("/spec/selector"));
      JsonNode deployment = kind("Deployment").stream().filter(d -> labels(d.at("/spec/template/metadata/labels"))
          .entrySet().containsAll(selector.entrySet()) && namespace(d).equals(namespace(service))).findFirst()
          .orElseThrow(() -> new AssertionError("no router Deployment selected by " + name(service)));
      assertThat(selector).containsKey("region");
      JsonNode container = container(deployment);
      assertThat(containerPort(container, port.path("targetPort"))).isEqualTo(containerPort(container,
          YAML.valueToTree("epp")));
      assertThat(service.at("/spec/ports")).anySatisfy(p -> assertThat(containerPort(container, p.path("targetPort")))
          .isEqualTo(containerPort(container, YAML.valueToTree("epp-health"))));
    }
  }

  // --- the container image

  @Test
  void theImageCopiesWhatTheBuildProducesAndRunsMainOnTheDefaultPorts() throws IOException {
    String dockerfile = Files.readString(ROOT.resolve("Dockerfile"));

    // every build-stage COPY source is in the repository
    Matcher copy = Pattern.compile("(?m)^COPY (?!--from)(\\S+) ").matcher(dockerfile);
    int copies = 0;
    while (copy.find()) {
      assertThat(ROOT.resolve(copy.group(1))).as("COPY %s", copy.group(1)).exists();
      copies++;
    }
    assertThat(copies).isGreaterThanOrEqualTo(3);

    // what the build stage takes from router-server's target/ exists after package, as does each classpath entry
    Matcher built = Pattern.compile("modules/router-server/target/(\\S+)").matcher(dockerfile);
    Set<String> artifacts = new HashSet<>();
    while (built.find()) {
      artifacts.add(built.group(1));
    }
    assertThat(artifacts).contains("classpath.txt", "router-server-*.jar");
    Path jar;
    try (Stream<Path> files = Files.list(SERVER.resolve("target"))) {
      List<Path> jars = files.filter(p -> p.getFileName().toString().matches("router-server-.*\\.jar")
          && !p.getFileName().toString().contains("-tests")).toList();
      assertThat(jars).as("router-server-*.jar after package").singleElement();
      jar = jars.get(0);
    }
    Set<String> names = new HashSet<>();
    names.add(jar.getFileName().toString());
    for (String entry : Files.readString(SERVER.resolve("target/classpath.txt")).strip().split(":")) {
      assertThat(Path.of(entry)).as("classpath entry").isRegularFile();
      // the image puts every jar in one directory: two jars of one name would overwrite each other
      assertThat(names.add(Path.of(entry).getFileName().toString())).as("jar name %s is unique", entry).isTrue();
    }

    // the entrypoint runs Main, from the jar the image holds
    Matcher entrypoint = Pattern.compile("(?s)ENTRYPOINT \\[(.*?)]").matcher(dockerfile);
    assertThat(entrypoint.find()).as("ENTRYPOINT").isTrue();
    assertThat(entrypoint.group(1)).contains("\"io.kvrouter.server.Main\"").contains("\"/opt/kvrouter/lib/*\"");
    assertThat(dockerfile).contains("COPY --from=build /opt/kvrouter/lib/ /opt/kvrouter/lib/");
    try (JarFile server = new JarFile(jar.toFile())) {
      assertThat(server.getEntry("io/kvrouter/server/Main.class")).isNotNull();
      assertThat(server.getEntry("application.conf")).isNotNull();
    }

    // EXPOSE lists the router's default gRPC, management, remoting, HTTP front and endpoint picker ports
    Matcher expose = Pattern.compile("(?m)^EXPOSE (.+)$").matcher(dockerfile);
    assertThat(expose.find()).as("EXPOSE").isTrue();
    Set<Integer> exposed = new TreeSet<>();
    for (String port : expose.group(1).strip().split("\\s+")) {
      exposed.add(Integer.parseInt(port));
    }
    assertThat(exposed).containsExactlyInAnyOrder(DEFAULTS.getInt("kvrouter.grpc.port"),
        DEFAULTS.getInt("kvrouter.management.port"), DEFAULTS.getInt("pekko.remote.artery.canonical.port"),
        DEFAULTS.getInt("kvrouter.front.port"), DEFAULTS.getInt("kvrouter.epp.port"),
        DEFAULTS.getInt("kvrouter.epp.health-port"));

    // the variables the image sets are the router's
    Matcher env = Pattern.compile("(KVROUTER_[A-Z0-9_]+)=").matcher(dockerfile);
    Set<String> read = variablesTheRouterReads();
    while (env.find()) {
      assertThat(read).as("%s set by the Dockerfile", env.group(1)).contains(env.group(1));
    }
  }

  // --- helpers

  /** Every variable router-server's configuration files (its *.conf and logback.xml) read. */
  private static Set<String> variablesTheRouterReads() throws IOException {
    Set<String> names = new TreeSet<>();
    try (Stream<Path> files = Files.list(SERVER.resolve("src/main/resources"))) {
      for (Path conf : files.filter(p -> p.toString().endsWith(".conf") || p.endsWith("logback.xml")).toList()) {
        Matcher m = VARIABLE.matcher(Files.readString(conf));
        while (m.find()) {
          names.add(m.group(1));
        }
      }
    }
    return names;
  }

  private static List<JsonNode> manifests() throws IOException {
    List<JsonNode> documents = documents(ROOT.resolve("deploy/kubernetes"));
    assertThat(documents).as("documents in deploy/kubernetes").isNotEmpty();
    return documents;
  }

  /** The Kubernetes objects of the YAML files in {@code dir} (kind and apiVersion set). */
  private static List<JsonNode> documents(Path dir) throws IOException {
    List<JsonNode> documents = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path file : files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
        try (var values = YAML.readerFor(JsonNode.class).<JsonNode>readValues(file.toFile())) {
          while (values.hasNext()) {
            JsonNode document = values.next();
            if (document != null && !document.isNull() && document.has("kind") && document.has("apiVersion")) {
              documents.add(document);
            }
          }
        }
      }
    }
    return documents;
  }

  private static List<JsonNode> kind(String kind) throws IOException {
    List<JsonNode> found = manifests().stream().filter(d -> d.path("kind").asText().equals(kind)).toList();
    assertThat(found).as("%s manifests", kind).isNotEmpty();
    return found;
  }

  private static String name(JsonNode object) {
    return object.at("/metadata/name").asText();
  }

  private static String namespace(JsonNode object) {
    return object.at("/metadata/namespace").asText("default");
  }

  private static JsonNode container(JsonNode deployment) {
    JsonNode containers = deployment.at("/spec/template/spec/containers");
    assertThat(containers.size()).as("containers of %s", name(deployment)).isEqualTo(1);
    return containers.get(0);
  }

  private static JsonNode envEntry(JsonNode deployment, String name) {
    for (JsonNode entry : container(deployment).path("env")) {
      if (entry.path("name").asText().equals(name)) {
        return entry;
      }
    }
    throw new AssertionError(name + " is not set in " + name(deployment));
  }

  /** The container's environment: name to literal value (empty for values from elsewhere). */
  private static Map<String, String> env(JsonNode deployment) {
    Map<String, String> env = new LinkedHashMap<>();
    for (JsonNode entry : container(deployment).path("env")) {
      assertThat(env.put(entry.path("name").asText(), entry.path("value").asText())).as("%s set twice",
          entry.path("name").asText()).isNull();
    }
    return env;
  }

  /** The value the manifest gives {@code variable}, else the router's default for the key it sets. */
  private static String setting(Map<String, String> env, String variable, String key) {
    return env.containsKey(variable) ? env.get(variable) : DEFAULTS.getString(key);
  }

  private static Map<String, String> labels(JsonNode labels) {
    Map<String, String> map = new HashMap<>();
    labels.fields().forEachRemaining(e -> map.put(e.getKey(), e.getValue().asText()));
    return map;
  }

  /** A port given by number or by the name of one of the container's ports. */
  private static int containerPort(JsonNode container, JsonNode port) {
    if (port.isInt()) {
      return port.asInt();
    }
    for (JsonNode declared : container.path("ports")) {
      if (declared.path("name").asText().equals(port.asText())) {
        return declared.path("containerPort").asInt();
      }
    }
    throw new AssertionError("no container port named " + port);
  }

  private static boolean grantsPodListing(JsonNode role) {
    for (JsonNode rule : role.path("rules")) {
      Set<String> groups = new HashSet<>();
      rule.path("apiGroups").forEach(g -> groups.add(g.asText()));
      Set<String> resources = new HashSet<>();
      rule.path("resources").forEach(r -> resources.add(r.asText()));
      Set<String> verbs = new HashSet<>();
      rule.path("verbs").forEach(v -> verbs.add(v.asText()));
      if (groups.contains("") && resources.contains("pods") && verbs.containsAll(List.of("get", "watch", "list"))) {
        return true;
      }
    }
    return false;
  }
}
