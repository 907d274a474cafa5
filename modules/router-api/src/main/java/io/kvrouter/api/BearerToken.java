package io.kvrouter.api;

import io.grpc.Metadata;

/**
 * How a client presents its token when the router's auth is on ({@code kvrouter.auth}): the {@code authorization}
 * header, {@code Bearer <token>}. One spelling for the server, the CLI and tests.
 */
public final class BearerToken {
  public static final String HEADER = "authorization";
  public static final Metadata.Key<String> KEY = Metadata.Key.of(HEADER, Metadata.ASCII_STRING_MARSHALLER);
  public static final String SCHEME = "Bearer ";

  private BearerToken() {}

  /** The header value carrying {@code token}. */
  public static String headerValue(String token) {
    return SCHEME + token;
  }

  /** The token in an {@code authorization} header value, or null when there is none or it is not a bearer token. */
  public static String of(String headerValue) {
    if (headerValue == null || !headerValue.regionMatches(true, 0, SCHEME, 0, SCHEME.length())) {
      return null;
    }
    String token = headerValue.substring(SCHEME.length()).trim();
    return token.isEmpty() ? null : token;
  }
}
