package io.kvrouter.core.policy;

import java.util.Locale;

/**
 * How a policy class orders its queued Books within one strict-priority tier (higher score first, then arrival).
 * {@code jump} is the request's {@code priority} (negative counts as 0).
 */
public enum QueueOrder {
  /** {@code jump − age} in seconds: arrival order, a jump of p counting as p seconds of waiting. Bounds tail waits. */
  FCFS,
  /**
   * Smith's rule, {@code (1 + jump) / max(1, uncached prompt tokens)}: the cheapest prefill first, which minimises the
   * mean wait; long prompts wait behind every shorter one that keeps arriving.
   */
  WSPT;

  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The order named {@code wire} ({@code fcfs} or {@code wspt}), or null. */
  static QueueOrder fromWireName(String wire) {
    for (QueueOrder order : values()) {
      if (order.wireName().equals(wire)) {
        return order;
      }
    }
    return null;
  }
}
