package io.kvrouter.front.routing;

import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.load.ReportedLoad;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.front.request.ClientRequest;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * The LoRA adapters a model's workers serve, as this node's view knows them: declared at Register
 * ({@code WorkerRegistration.lora_adapters}) or named in a rank's last load report (an engine connector reads vLLM's
 * {@code vllm:lora_requests_info}). vLLM serves an adapter under its own name in the body's {@code model}; the front
 * books such a request for the base model with {@code lora_name} = the adapter (router-core's LoRA placement then
 * prefers the workers that have it loaded). The front and the endpoint picker both book through {@link #resolve}.
 */
public final class LoraAdapters {
  private LoraAdapters() {}

  /** The adapters the model's workers serve, sorted (empty without a view). */
  public static SortedSet<String> of(SelectionView view) {
    SortedSet<String> adapters = new TreeSet<>();
    if (view == null) {
      return adapters;
    }
    for (WorkerConfig worker : view.workers().values()) {
      adapters.addAll(worker.loraAdapters());
    }
    for (int i = 0; i < view.rankCount(); i++) {
      ReportedLoad reported = view.cell(i).reported();
      if (reported != null) {
        adapters.addAll(reported.loraAdapters());
      }
    }
    return adapters;
  }

  /**
   * {@code request} as it books here: a body {@code model} that no worker serves as a model but that a model's workers
   * serve as an adapter books that base model with {@code loraName} = the adapter (the body goes on unchanged: vLLM
   * serves the adapter by its name); any other request unchanged (an unknown name stays unknown).
   */
  public static ClientRequest resolve(RouterCluster cluster, ClientRequest request) {
    SelectionView named = cluster.view(request.model());
    if (named != null && !named.isEmpty()) {
      return request;
    }
    String base = baseModel(cluster, request.model());
    return base == null ? request : request.forAdapter(base, request.model());
  }

  /**
   * The model whose workers serve the adapter {@code name}, or null when no model here does. Adapter names are the
   * engines' own; two base models serving one name would be a deployment error: the first model by name wins.
   */
  public static String baseModel(RouterCluster cluster, String name) {
    for (String model : new TreeSet<>(cluster.models())) {
      if (!model.equals(name) && of(cluster.view(model)).contains(name)) {
        return model;
      }
    }
    return null;
  }
}
