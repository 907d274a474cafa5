package io.kvrouter.interop;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The deployment manifests validated offline by software kvrouter did not write: every built-in kind of
 * deploy/kubernetes and deploy/gateway against Kubernetes' own schemas (the kubernetes-validate package, strict), the
 * InferencePool against the openAPIV3Schema of GIE's published CRD (vendored in src/test/resources/gie), and the plain
 * Envoy recipe by Envoy itself ({@code envoy --mode validate}). Broken copies of the manifests must be refused, so the
 * checks are known to check.
 */
class DeploymentSchemasTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final Path ROOT = SimulatedFleet.REPO;
  private static final Path CRD = Path.of("src/test/resources/gie/inferencepools.crd.yaml").toAbsolutePath();

  private static List<String> kubernetesFiles() throws Exception {
    List<String> files = new ArrayList<>();
    for (String dir : List.of("deploy/kubernetes", "deploy/gateway")) {
      try (Stream<Path> listed = Files.list(ROOT.resolve(dir))) {
        listed.filter(p -> p.toString().endsWith(".yaml") && !p.getFileName().toString().equals("envoy.yaml"))
            .sorted().forEach(p -> files.add(p.toString()));
      }
    }
    return files;
  }

  private static List<JsonNode> run(boolean expectInvalid, List<String> files) throws Exception {
    List<String> args = new ArrayList<>(List.of("--crd", CRD.toString()));
    if (expectInvalid) {
      args.add("--expect-invalid");
    }
    args.addAll(files);
    PythonProgram.Result result = PythonProgram.run(120, "validate_manifests.py", args.toArray(String[]::new));
    List<JsonNode> lines = new ArrayList<>();
    for (String line : result.stdout().strip().split("\n")) {
      if (!line.isBlank()) {
        lines.add(JSON.readTree(line));
      }
    }
    assertThat(result.exitCode()).as("%s%n%s", result.stdout(), result.stderr()).isZero();
    return lines;
  }

  @Test
  void everyManifestIsValidForKubernetesAndTheInferencePoolForItsCrd() throws Exception {
    List<JsonNode> results = run(false, kubernetesFiles());
    assertThat(results).allSatisfy(r -> assertThat(r.get("ok").asBoolean()).as(r.toString()).isTrue());
    assertThat(results).extracting(r -> r.get("kind").asText())
        .contains("Namespace", "Deployment", "Service", "Role", "RoleBinding", "ServiceAccount", "InferencePool");
  }

  @Test
  void brokenCopiesAreRefused() throws Exception {
    JsonNode pool = YAML.readTree(ROOT.resolve("deploy/gateway/inferencepool.yaml").toFile());
    JsonNode service = YAML.readTree(ROOT.resolve("deploy/gateway/epp-service.yaml").toFile());
    List<JsonNode> broken = new ArrayList<>();
    ObjectNode noPorts = pool.deepCopy();
    ((ObjectNode) noPorts.get("spec")).remove("targetPorts");
    broken.add(noPorts);
    ObjectNode badMode = pool.deepCopy();
    ((ObjectNode) badMode.at("/spec/endpointPickerRef")).put("failureMode", "Sometimes");
    broken.add(badMode);
    ObjectNode noPickerPort = pool.deepCopy();
    ((ObjectNode) noPickerPort.at("/spec/endpointPickerRef")).remove("port");
    broken.add(noPickerPort);
    ObjectNode oldField = pool.deepCopy();
    ((ObjectNode) oldField.get("spec")).putObject("extensionRef").put("name", "kvrouter-epp");
    broken.add(oldField);
    ObjectNode oldVersion = pool.deepCopy();
    oldVersion.put("apiVersion", "inference.networking.x-k8s.io/v1alpha2");
    broken.add(oldVersion);
    ObjectNode badServicePort = service.deepCopy();
    ((ObjectNode) badServicePort.at("/spec/ports/0")).put("port", "ninety");
    broken.add(badServicePort);
    Path file = Files.createTempFile("broken-manifests", ".yaml");
    try {
      StringBuilder yaml = new StringBuilder();
      for (JsonNode document : broken) {
        yaml.append(YAML.writeValueAsString(document));
      }
      Files.writeString(file, yaml);
      List<JsonNode> results = run(true, List.of(file.toString()));
      assertThat(results).hasSize(broken.size())
          .allSatisfy(r -> assertThat(r.get("ok").asBoolean()).as(r.toString()).isFalse());
    } finally {
      Files.deleteIfExists(file);
    }
  }

  @Test
  void envoyAcceptsThePlainEnvoyRecipe() throws Exception {
    EnvoyProcess.Validation validation = EnvoyProcess.validate(ROOT.resolve("deploy/gateway/envoy.yaml"));
    assertThat(validation.exitCode()).as(validation.output()).isZero();
    assertThat(validation.output()).contains("OK");
  }
}
