package io.kvrouter.front.request;

/**
 * A request's headers as any transport has them (Pekko HTTP here, Envoy's header map in the endpoint picker):
 * the first value of a header by its name, case-insensitively, or null.
 */
@FunctionalInterface
public interface RequestHeaders {
  String get(String name);
}
