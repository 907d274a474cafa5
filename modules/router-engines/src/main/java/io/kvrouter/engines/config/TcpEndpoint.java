package io.kvrouter.engines.config;

/**
 * A ZMQ {@code tcp://host:port} endpoint. The engines bind rank r's sockets at the configured port + r (vLLM's and
 * SGLang's {@code offset_endpoint_port}), so {@link #forRank} is how every rank's address is found.
 */
public record TcpEndpoint(String host, int port) {

  /** Parses {@code tcp://host:port} (an IPv6 host in brackets); null when it is not one. */
  public static TcpEndpoint parse(String endpoint) {
    if (endpoint == null || !endpoint.startsWith("tcp://")) {
      return null;
    }
    String rest = endpoint.substring("tcp://".length());
    int colon = rest.lastIndexOf(':');
    if (colon <= 0 || colon == rest.length() - 1) {
      return null;
    }
    String host = rest.substring(0, colon);
    if (host.contains("*") || (host.contains(":") && !(host.startsWith("[") && host.endsWith("]")))) {
      return null;
    }
    try {
      int port = Integer.parseInt(rest.substring(colon + 1));
      return port < 1 || port > 65535 ? null : new TcpEndpoint(host, port);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** Rank {@code rank}'s endpoint: the port plus the rank. */
  public TcpEndpoint forRank(int rank) {
    return new TcpEndpoint(host, port + rank);
  }

  @Override
  public String toString() {
    return "tcp://" + host + ":" + port;
  }
}
