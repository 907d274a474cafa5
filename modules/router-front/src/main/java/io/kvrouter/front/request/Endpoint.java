package io.kvrouter.front.request;

/** The OpenAI endpoints the front routes (each forwarded to the same path on the engine). */
public enum Endpoint {
  CHAT_COMPLETIONS("/v1/chat/completions"),
  COMPLETIONS("/v1/completions");

  private final String path;

  Endpoint(String path) {
    this.path = path;
  }

  public String path() {
    return path;
  }

  /** The endpoint of a path, or null. */
  public static Endpoint of(String path) {
    for (Endpoint endpoint : values()) {
      if (endpoint.path.equals(path)) {
        return endpoint;
      }
    }
    return null;
  }
}
