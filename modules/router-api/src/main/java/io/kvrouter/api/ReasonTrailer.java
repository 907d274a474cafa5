package io.kvrouter.api;

import io.grpc.Metadata;

/**
 * The trailer in which the server puts the machine-readable reason of every rejection (docs/architecture.md,
 * "Errors"), e.g. {@code kvrouter-reason: UNKNOWN_MODEL}. One name for the server, its clients, the CLI and the
 * benchmarks.
 */
public final class ReasonTrailer {
  public static final String NAME = "kvrouter-reason";
  /** The same trailer as a grpc-java metadata key. */
  public static final Metadata.Key<String> KEY = Metadata.Key.of(NAME, Metadata.ASCII_STRING_MARSHALLER);

  private ReasonTrailer() {}

  /** The reason in {@code trailers}, or null when there are none or the server sent no reason. */
  public static String of(Metadata trailers) {
    return trailers == null ? null : trailers.get(KEY);
  }
}
