package io.kvrouter.engines.placement;

import io.kvrouter.engines.connector.EngineStatus;

/** What travels on the region's engine status topic. */
public sealed interface StatusUpdate extends EngineMessage {
  /** A connector's status, published every status interval and when it stops. */
  record Published(EngineStatus status) implements StatusUpdate {}

  /** The engine was retired (no source lists it): nodes forget it. */
  record Retired(String model, String workerId, long incarnation) implements StatusUpdate {}
}
