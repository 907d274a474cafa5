package io.kvrouter.engines.discovery;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.engines.config.EngineKey;
import io.kvrouter.engines.config.EngineKind;
import io.kvrouter.engines.config.EngineSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Engines from Kubernetes: the pods matching a label selector in a namespace, watched through a fabric8 informer. A
 * pod is an engine while it is Ready, has an IP and is not being deleted; it is described by annotations and named
 * container ports:
 *
 * <ul>
 *   <li>annotation {@code kvrouter.io/model} (required): the router's model name;</li>
 *   <li>{@code kvrouter.io/kind}: {@code vllm} (default) or {@code sglang};</li>
 *   <li>{@code kvrouter.io/worker-id} (default: the pod's name), {@code kvrouter.io/dp-size},
 *       {@code kvrouter.io/block-size}, {@code kvrouter.io/total-kv-blocks},
 *       {@code kvrouter.io/max-num-batched-tokens}, {@code kvrouter.io/kv-events-topic},
 *       {@code kvrouter.io/metrics-path} (default {@code /metrics}): as the engines file's keys;</li>
 *   <li>{@code kvrouter.io/role}: {@code aggregated} (default), {@code prefill} or {@code decode}, as the engines
 *       file's {@code role}; without it, llm-d's pod label {@code llm-d.ai/role}: {@code prefill}, {@code decode},
 *       or {@code prefill-decode} (and its deprecated {@code both}: a pod that serves whole requests) as
 *       aggregated;</li>
 *   <li>container port named {@code http} (required): the OpenAI-compatible API and metrics,
 *       {@code http://POD_IP:PORT}; {@code kv-events}: rank 0's ZMQ PUB port; {@code kv-replay}: rank 0's replay
 *       port (rank r: port + r, as the engines bind them).</li>
 * </ul>
 * A pod that turns ready registers (through the placement); one that is deleted, stops being ready or stops matching
 * deregisters once no node's sources list it.
 */
public final class KubernetesSource implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(KubernetesSource.class);
  public static final String PREFIX = "kvrouter.io/";
  /** llm-d's pod label naming a model server's role in prefill/decode disaggregation. */
  public static final String LLM_D_ROLE = "llm-d.ai/role";

  private final EngineSources sources;
  private final String namespace;
  private final SharedIndexInformer<Pod> informer;

  public KubernetesSource(KubernetesClient client, String namespace, String labelSelector, Duration resync,
      EngineSources sources) {
    this.sources = sources;
    this.namespace = namespace.isEmpty() ? client.getNamespace() : namespace;
    var pods = client.pods().inNamespace(this.namespace);
    var selected = labelSelector.isEmpty() ? pods : pods.withLabelSelector(labelSelector);
    // handlers go on before the informer starts: an event must never find this object half-built
    this.informer = selected.runnableInformer(resync.toMillis());
    informer.addEventHandler(new ResourceEventHandler<>() {
      @Override
      public void onAdd(Pod pod) {
        refresh();
      }

      @Override
      public void onUpdate(Pod before, Pod after) {
        refresh();
      }

      @Override
      public void onDelete(Pod pod, boolean finalStateUnknown) {
        refresh();
      }
    });
    informer.start();
    refresh();
  }

  /** Recomputes the engines from the informer's cache of pods. */
  private synchronized void refresh() {
    Map<EngineKey, SourcedSpec> engines = new LinkedHashMap<>();
    List<String> problems = new ArrayList<>();
    Map<String, Pod> pods = new TreeMap<>();
    for (Pod pod : informer.getStore().list()) {
      pods.put(pod.getMetadata().getName(), pod);
    }
    for (Pod pod : pods.values()) {
      if (!ready(pod)) {
        continue;
      }
      List<String> podProblems = new ArrayList<>();
      EngineSpec spec = spec(pod, podProblems);
      if (podProblems.isEmpty()) {
        podProblems.addAll(spec.problems());
      }
      String name = namespace + "/" + pod.getMetadata().getName();
      if (podProblems.isEmpty() && engines.containsKey(spec.key())) {
        podProblems.add("model and worker id repeat another pod's");
      }
      if (!podProblems.isEmpty()) {
        problems.add("pod " + name + ": " + String.join("; ", podProblems));
        continue;
      }
      engines.put(spec.key(), new SourcedSpec(spec, "kubernetes:" + name));
    }
    sources.update(EngineSources.KUBERNETES, engines, problems);
  }

  static boolean ready(Pod pod) {
    if (pod.getMetadata().getDeletionTimestamp() != null || pod.getStatus() == null
        || pod.getStatus().getPodIP() == null || pod.getStatus().getPodIP().isEmpty()) {
      return false;
    }
    List<PodCondition> conditions = pod.getStatus().getConditions();
    if (conditions == null) {
      return false;
    }
    for (PodCondition condition : conditions) {
      if ("Ready".equals(condition.getType())) {
        return "True".equals(condition.getStatus());
      }
    }
    return false;
  }

  static EngineSpec spec(Pod pod, List<String> problems) {
    Map<String, String> annotations = pod.getMetadata().getAnnotations() == null ? Map.of()
        : pod.getMetadata().getAnnotations();
    String model = annotations.get(PREFIX + "model");
    if (model == null || model.isBlank()) {
      problems.add("annotation " + PREFIX + "model is required");
    }
    String kindName = annotations.getOrDefault(PREFIX + "kind", "vllm");
    EngineKind kind = EngineKind.parse(kindName);
    if (kind == null) {
      problems.add("annotation " + PREFIX + "kind: '" + kindName + "' is neither vllm nor sglang");
    }
    String ip = pod.getStatus().getPodIP();
    String host = ip.contains(":") ? "[" + ip + "]" : ip;
    Integer http = port(pod, "http");
    Integer events = port(pod, "kv-events");
    Integer replay = port(pod, "kv-replay");
    if (http == null) {
      problems.add("no container port named http");
    }
    String base = http == null ? null : "http://" + host + ":" + http;
    String metricsPath = annotations.getOrDefault(PREFIX + "metrics-path", "/metrics");
    String metrics = base == null ? null : base + (metricsPath.startsWith("/") ? "" : "/") + metricsPath;
    return EngineSpec.of(model, annotations.getOrDefault(PREFIX + "worker-id", pod.getMetadata().getName()), kind,
        base, metrics, events == null ? null : "tcp://" + host + ":" + events,
        replay == null ? null : "tcp://" + host + ":" + replay, annotations.get(PREFIX + "kv-events-topic"),
        number(annotations, "dp-size", problems), number(annotations, "block-size", problems),
        number(annotations, "total-kv-blocks", problems), number(annotations, "max-num-batched-tokens", problems),
        role(pod, annotations, problems));
  }

  /** {@code kvrouter.io/role}, else llm-d's {@code llm-d.ai/role} label, else null (aggregated). */
  private static WorkerRole role(Pod pod, Map<String, String> annotations, List<String> problems) {
    String value = annotations.get(PREFIX + "role");
    if (value != null) {
      WorkerRole role = EnginesFile.roleNamed(value.trim());
      if (role == null) {
        problems.add("annotation " + PREFIX + "role: '" + value + "' is not " + EnginesFile.ROLE_NAMES);
      }
      return role;
    }
    Map<String, String> labels = pod.getMetadata().getLabels();
    String label = labels == null ? null : labels.get(LLM_D_ROLE);
    if (label == null) {
      return null;
    }
    return switch (label.trim()) {
      case "prefill" -> WorkerRole.PREFILL;
      case "decode" -> WorkerRole.DECODE;
      // llm-d's pod for either stage: here one that serves whole requests (kvrouter pairs take one-role workers)
      case "prefill-decode", "both" -> WorkerRole.AGGREGATED;
      default -> {
        problems.add("label " + LLM_D_ROLE + ": '" + label + "' is not prefill, decode, prefill-decode or both");
        yield null;
      }
    };
  }

  private static Integer port(Pod pod, String name) {
    if (pod.getSpec() == null || pod.getSpec().getContainers() == null) {
      return null;
    }
    for (Container container : pod.getSpec().getContainers()) {
      if (container.getPorts() == null) {
        continue;
      }
      for (ContainerPort port : container.getPorts()) {
        if (name.equals(port.getName()) && port.getContainerPort() != null) {
          return port.getContainerPort();
        }
      }
    }
    return null;
  }

  private static Integer number(Map<String, String> annotations, String name, List<String> problems) {
    String value = annotations.get(PREFIX + name);
    if (value == null) {
      return null;
    }
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      problems.add("annotation " + PREFIX + name + ": '" + value + "' is not a whole number");
      return null;
    }
  }

  @Override
  public void close() {
    informer.close();
    log.debug("kubernetes engine discovery in {} stopped", namespace);
  }
}
