package io.kvrouter.engines.config;

import java.util.Objects;

/**
 * An engine's identity in the region: the router's model and the worker id it registers as. {@link #entityId()} is
 * its Cluster Sharding entity id (length-prefixed, so no model or worker name can make two keys collide).
 */
public record EngineKey(String model, String workerId) implements Comparable<EngineKey> {
  public EngineKey {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(workerId, "workerId");
  }

  public String entityId() {
    return model.length() + ":" + model + workerId;
  }

  /** The inverse of {@link #entityId()}; null when {@code id} is not one. */
  public static EngineKey fromEntityId(String id) {
    int colon = id.indexOf(':');
    if (colon <= 0) {
      return null;
    }
    try {
      int length = Integer.parseInt(id.substring(0, colon));
      if (length < 0 || colon + 1 + length > id.length()) {
        return null;
      }
      return new EngineKey(id.substring(colon + 1, colon + 1 + length), id.substring(colon + 1 + length));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  @Override
  public int compareTo(EngineKey other) {
    int byModel = model.compareTo(other.model);
    return byModel != 0 ? byModel : workerId.compareTo(other.workerId);
  }

  @Override
  public String toString() {
    return model + "/" + workerId;
  }
}
