package io.kvrouter.engines.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Kubernetes discovery against fabric8's mock API server (CRUD mode): pods matching the selector come, turn ready
 * (then they are engines, from their annotations and named ports), lose readiness and go.
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

      client.pods().inNamespace(NS).resource(pod("vllm-a", "127.0.1.5", false, true)).update();
      await().atMost(WAIT).until(() -> sources.engine(key) == null);
      client.pods().inNamespace(NS).resource(pod("vllm-a", "127.0.1.5", true, true)).update();
      await().atMost(WAIT).until(() -> sources.engine(key) != null);
      client.pods().inNamespace(NS).withName("vllm-a").delete();
      await().atMost(WAIT).until(() -> sources.engine(key) == null);
    }
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
