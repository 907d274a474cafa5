package io.kvrouter.epp;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;

/**
 * An endpoint as the Endpoint Picker Protocol names it: {@code ip:port} ({@code [v6]:port} for IPv6), made from a
 * worker's registered endpoint (the engine's base URL, e.g. {@code http://10.0.0.7:8000}) or read from a subset hint
 * entry, where the port may be absent (then only the address is compared).
 *
 * @param port the port, or -1 when a hint entry gives none
 */
public record Destination(String host, int port) {

  /** The endpoint of a worker's base URL (scheme optional; no port: the scheme's default), or null if it has none. */
  public static Destination ofEndpoint(String endpoint) {
    if (endpoint == null || endpoint.isBlank()) {
      return null;
    }
    String text = endpoint.strip();
    if (!text.contains("://")) {
      text = "http://" + text;
    }
    try {
      URI uri = new URI(text);
      String host = uri.getHost();
      if (host == null || host.isEmpty()) {
        return null;
      }
      int port = uri.getPort();
      if (port < 0) {
        port = "https".equalsIgnoreCase(uri.getScheme()) ? 443 : 80;
      }
      return new Destination(bare(host), port);
    } catch (URISyntaxException e) {
      return null;
    }
  }

  /** A subset hint entry: {@code ip:port}, {@code [v6]:port}, a bare IPv4 or IPv6 address; null if malformed. */
  public static Destination ofHint(String entry) {
    String text = entry == null ? "" : entry.strip();
    if (text.isEmpty()) {
      return null;
    }
    if (text.startsWith("[")) {
      int close = text.indexOf(']');
      if (close < 0) {
        return null;
      }
      String host = text.substring(1, close);
      String rest = text.substring(close + 1);
      if (rest.isEmpty()) {
        return new Destination(host.toLowerCase(Locale.ROOT), -1);
      }
      return rest.startsWith(":") ? withPort(host, rest.substring(1)) : null;
    }
    int colon = text.indexOf(':');
    if (colon < 0) {
      return new Destination(text.toLowerCase(Locale.ROOT), -1);
    }
    if (text.indexOf(':', colon + 1) >= 0) {
      return new Destination(text.toLowerCase(Locale.ROOT), -1); // a bare IPv6 address
    }
    return withPort(text.substring(0, colon), text.substring(colon + 1));
  }

  private static Destination withPort(String host, String port) {
    try {
      int number = Integer.parseInt(port);
      return host.isEmpty() || number < 1 || number > 65_535 ? null
          : new Destination(host.toLowerCase(Locale.ROOT), number);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static String bare(String host) {
    String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    return h.toLowerCase(Locale.ROOT);
  }

  /**
   * Whether this hint entry admits {@code endpoint}: the same address and port, or the same address when the entry
   * gives no port.
   */
  public boolean admits(Destination endpoint) {
    return host.equals(endpoint.host) && (port < 0 || port == endpoint.port);
  }

  /** {@code ip:port} as the protocol writes it. */
  @Override
  public String toString() {
    String h = host.indexOf(':') >= 0 ? "[" + host + "]" : host;
    return port < 0 ? h : h + ":" + port;
  }
}
