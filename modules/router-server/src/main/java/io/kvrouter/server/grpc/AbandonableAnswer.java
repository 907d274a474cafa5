package io.kvrouter.server.grpc;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An answer whose call can still be undone after it completed. Cancelling a completed future does nothing, so a
 * binding that learns of a cancelled call before it wrote the answer, or of a late cancel after it wrote it, calls
 * {@link #abandon} instead: a Book's booking is then freed, where it would otherwise stay until its lease.
 */
public final class AbandonableAnswer<T> extends CompletableFuture<T> {
  private final Runnable undo;
  private final AtomicBoolean abandoned = new AtomicBoolean();

  AbandonableAnswer(Runnable undo) {
    this.undo = undo;
  }

  /**
   * The caller will never see this answer: cancels it if still pending, and undoes what the call made. Only the first
   * call acts (a binding may hear of one cancel twice: from grpc-java and from the connection's frames).
   */
  public void abandon() {
    if (abandoned.compareAndSet(false, true)) {
      cancel(false);
      undo.run();
    }
  }
}
