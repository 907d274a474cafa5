package io.kvrouter.server.grpc;

import java.util.concurrent.CompletableFuture;

/**
 * An answer whose call can still be undone after it completed. Cancelling a completed future does nothing, so a
 * binding that learns of a cancelled call before it wrote the answer calls {@link #abandon} instead: a Book's booking
 * is then freed, where it would otherwise stay until its lease.
 */
public final class AbandonableAnswer<T> extends CompletableFuture<T> {
  private final Runnable undo;

  AbandonableAnswer(Runnable undo) {
    this.undo = undo;
  }

  /** The caller will never see this answer: cancels it if still pending, and undoes what the call made. */
  public void abandon() {
    cancel(false);
    undo.run();
  }
}
