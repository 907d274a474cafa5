package io.kvrouter.server.transport;

import java.util.Locale;

/** How the one gRPC port is served; chosen by {@code kvrouter.grpc.binding}. */
public enum Binding {
  /** Pekko gRPC's generated handlers on pekko-http. */
  PEKKO("pekko"),
  /** grpc-java's Netty server over the protoc-gen-grpc-java stubs, with a direct executor (handlers never block). */
  NETTY("netty");

  private final String configName;

  Binding(String configName) {
    this.configName = configName;
  }

  public String configName() {
    return configName;
  }

  public static Binding fromConfig(String value) {
    String wanted = value.trim().toLowerCase(Locale.ROOT);
    for (Binding binding : values()) {
      if (binding.configName.equals(wanted)) {
        return binding;
      }
    }
    throw new IllegalArgumentException("kvrouter.grpc.binding must be one of pekko, netty; got '" + value + "'");
  }
}
