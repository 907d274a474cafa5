package io.kvrouter.front;

/** A request the front answers with {@link #error()}; no stack trace (it is an answer, not a bug). */
public final class FrontException extends RuntimeException {
  private final FrontError error;

  public FrontException(FrontError error) {
    super(error.message(), null, false, false);
    this.error = error;
  }

  public FrontError error() {
    return error;
  }
}
