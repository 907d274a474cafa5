package io.kvrouter.engines.config;

import java.util.Locale;

/** Which engine publishes the events and serves the metrics: their wire formats differ in details. */
public enum EngineKind {
  VLLM,
  SGLANG;

  /** {@code vllm} or {@code sglang} (any case); null for anything else. */
  public static EngineKind parse(String name) {
    if (name == null) {
      return null;
    }
    return switch (name.trim().toLowerCase(Locale.ROOT)) {
      case "vllm" -> VLLM;
      case "sglang" -> SGLANG;
      default -> null;
    };
  }

  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
