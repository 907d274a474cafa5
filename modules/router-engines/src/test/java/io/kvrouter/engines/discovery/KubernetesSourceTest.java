package io.kvrouter.engines.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Kubernetes discovery against fabric8's mock API server (CRUD mode): pods matching the selector come, turn ready
 * (then they are engines, from their annotations, role label and named ports), lose readiness and go; a pod
 * with a bad annotation (a number, a role) is named as a problem and not run.
 */
@EnableKubernetesMockClient(crud = true)
@Timeout(60)
class KubernetesSourceTest {
  static final String NS = "serving";
  static final Duration WAIT = Duration.ofSeconds(20);

  KubernetesClient client;

  @Test
  void readyPodsAreEnginesAndGoWhenTheyGo() {
    EngineSources sources = new EngineSources();
    client.pods().inNamespace(NS).resource(pod("vllm-a", "127.0.1.5", false, true)).create();
    client.pods().inNamespace(NS).resource(pod("other", "127.0.1.6", true, false)).create();
    try (KubernetesSource source = new KubernetesSource(client, NS, "kvrouter.io/engine=true", Duration.ofMinutes(1),
        sources)) {
      // there, matching, but not ready yet: not an engine
      await().atMost(WAIT).until(() -> sources.problems().containsKey(EngineSources.KUBERNETES));
      assertThat(sources.engines()).isEmpty();

      client.pods().inNamespace(NS).resource(pod("vllm-a", "127.0.1.5", true, true)).update();
      EngineKey key = new EngineKey("org/llama-8b", "vllm-a");
      await().atMost(WAIT).until(() -> sources.engine(key) != null);
      EngineSpec spec = sources.engine(key).spec();
      assertThat(spec).isEqualTo(new EngineSpec("org/llama-8b", "vllm-a", EngineKind.VLLM, "http://127.0.1.5:8000",
          "http://127.0.1.5:8000/metrics", "tcp://127.0.1.5:5557", "tcp://127.0.1.5:5567", "kv-events", 2, 16, null,
          8192));
      assertThat(sources.engine(key).origin()).isEqualTo("kubernetes:" + NS + "/vllm-a");
      // the pod without the label is not selected at all
      assertThat(sources.engines()).hasSize(1);

      // a second pod with an annotation that is not a number is named as a problem, not run
      Pod bad = pod("vllm-b", "127.0.1.7", true, true);
      bad.getMetadata().getAnnotations().put("kvrouter.io/dp-size", "two");
      client.pods().inNamespace(NS).resource(bad).create();
      await().atMost(WAIT).until(() -> String.join(" ", sources.problems().get(EngineSources.KUBERNETES))
          .contains("vllm-b"));
      assertThat(sources.engines()).containsOnlyKeys(key);

      // so is a role neither vocabulary has; a pod of llm-d's decode label runs as a decode worker
      client.pods().inNamespace(NS).resource(withRole(pod("vllm-bad-role", "127.0.1.10", true, true), "leader", null))
          .create();
      client.pods().inNamespace(NS).resource(withRole(pod("vllm-d", "127.0.1.11", true, true), null, "decode"))
          .create();
      EngineKey decode = new EngineKey("org/llama-8b", "vllm-d");
      await().atMost(WAIT).until(() -> sources.engine(decode) != null);
      assertThat(sources.engine(decode).spec().role()).isEqualTo(WorkerRole.DECODE);
      await().atMost(WAIT).until(() -> String.join(" ", sources.problems().get(EngineSources.KUBERNETES))
          .contains("pod " + NS + "/vllm-bad-role: annotation kvrouter.io/role: 'leader'"));
      assertThat(sources.engines()).containsOnlyKeys(key, decode);
      client.pods().inNamespace(NS).withName("vllm-d").delete();
      await().atMost(WAIT).until(() -> sources.engine(decode) == null);

      client.pods().inNamespace(NS).resource(pod("vllm-a", "127.0.1.5", false, true)).update();
      await().atMost(WAIT).until(() -> sources.engine(key) == null);
      client.pods().inNamespace(NS).resource(pod("vllm-a", "127.0.1.5", true, true)).update();
      await().atMost(WAIT).until(() -> sources.engine(key) != null);
      client.pods().inNamespace(NS).withName("vllm-a").delete();
      await().atMost(WAIT).until(() -> sources.engine(key) == null);
    }
  }

  @Test
  void theRoleIsTheAnnotationsElseLlmDsLabelAndDefaultsToAggregated() {
    // {annotation kvrouter.io/role, label llm-d.ai/role} -> the role
    Map<List<String>, WorkerRole> expected = new LinkedHashMap<>();
    expected.put(Arrays.asList(null, null), WorkerRole.AGGREGATED);
    expected.put(Arrays.asList("prefill", null), WorkerRole.PREFILL);
    expected.put(Arrays.asList("decode", null), WorkerRole.DECODE);
    expected.put(Arrays.asList(" aggregated ", null), WorkerRole.AGGREGATED);
    expected.put(Arrays.asList(null, "prefill"), WorkerRole.PREFILL);
    expected.put(Arrays.asList(null, "decode"), WorkerRole.DECODE);
    expected.put(Arrays.asList(null, "prefill-decode"), WorkerRole.AGGREGATED);
    expected.put(Arrays.asList(null, "both"), WorkerRole.AGGREGATED);
    expected.put(Arrays.asList("decode", "prefill"), WorkerRole.DECODE); // the annotation wins
    for (var entry : expected.entrySet()) {
      List<String> problems = new ArrayList<>();
      EngineSpec spec = KubernetesSource.spec(withRole(pod("vllm-r", "127.0.1.9", true, true), entry.getKey().get(0),
          entry.getKey().get(1)), problems);
      assertThat(problems).as(entry.getKey().toString()).isEmpty();
      assertThat(spec.role()).as(entry.getKey().toString()).isEqualTo(entry.getValue());
    }
    // names neither vocabulary has are problems, named by where they came from
    Map<List<String>, String> bad = new LinkedHashMap<>();
    bad.put(Arrays.asList("both", null), "annotation kvrouter.io/role: 'both' is not aggregated, prefill or decode");
    bad.put(Arrays.asList("Decode", null), "annotation kvrouter.io/role: 'Decode'");
    bad.put(Arrays.asList(null, "encode"), "label llm-d.ai/role: 'encode' is not prefill, decode, prefill-decode");
    bad.put(Arrays.asList(null, "aggregated"), "label llm-d.ai/role: 'aggregated'");
    for (var entry : bad.entrySet()) {
      List<String> problems = new ArrayList<>();
      KubernetesSource.spec(withRole(pod("vllm-r", "127.0.1.9", true, true), entry.getKey().get(0),
          entry.getKey().get(1)), problems);
      assertThat(problems).as(entry.getKey().toString()).singleElement(InstanceOfAssertFactories.STRING)
          .startsWith(entry.getValue());
    }
  }

  /** {@code pod} with the annotation {@code kvrouter.io/role} and the label {@code llm-d.ai/role} (null: none). */
  static Pod withRole(Pod pod, String annotation, String label) {
    if (annotation != null) {
      pod.getMetadata().getAnnotations().put("kvrouter.io/role", annotation);
    }
    if (label != null) {
      pod.getMetadata().getLabels().put("llm-d.ai/role", label);
    }
    return pod;
  }

  static Pod pod(String name, String ip, boolean ready, boolean labelled) {
    PodBuilder pod = new PodBuilder().withNewMetadata().withName(name).withNamespace(NS)
        .addToAnnotations("kvrouter.io/model", "org/llama-8b")
        .addToAnnotations("kvrouter.io/dp-size", "2")
        .addToAnnotations("kvrouter.io/block-size", "16")
        .addToAnnotations("kvrouter.io/kv-events-topic", "kv-events")
        .endMetadata()
        .withNewSpec().addNewContainer().withName("engine").withImage("vllm")
        .addNewPort().withName("http").withContainerPort(8000).endPort()
        .addNewPort().withName("kv-events").withContainerPort(5557).endPort()
        .addNewPort().withName("kv-replay").withContainerPort(5567).endPort()
        .endContainer().endSpec()
        .withNewStatus().withPodIP(ip).addNewCondition().withType("Ready").withStatus(ready ? "True" : "False")
        .endCondition().endStatus();
    if (labelled) {
      pod.editMetadata().addToLabels("kvrouter.io/engine", "true").endMetadata();
    }
    return pod.build();
  }
}
