package io.kvrouter.api;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;

/** Small helpers for {@link java.util.concurrent.CompletionStage}s shared by the server and its clients. */
public final class Stages {
  /**
   * Runs a stage's continuation on the thread that completed the stage. Cheap mappings of an answer use it: an async
   * stage without an executor would go to the common pool, which starts a thread per task on 2 cores
   * (docs/architecture.md, "Measured pitfalls").
   */
  public static final Executor SAME_THREAD = Runnable::run;

  private Stages() {}

  /** The failure a stage was completed with, without the {@code CompletionException} / {@code ExecutionException} wrappers. */
  public static Throwable unwrap(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
