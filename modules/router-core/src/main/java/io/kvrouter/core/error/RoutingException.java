package io.kvrouter.core.error;

/** Carries a {@link RoutingError}; no stack trace, since rejections are ordinary answers on hot paths. */
public final class RoutingException extends RuntimeException {
  private final RoutingError error;

  public RoutingException(RoutingError error) {
    super(error.code() + " " + error.reason() + ": " + error.message(), null, false, false);
    this.error = error;
  }

  public RoutingError error() {
    return error;
  }
}
