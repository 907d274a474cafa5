package io.kvrouter.server.grpc;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/** Turns a rejection thrown while a call is set up into a failed stage, so one error path maps every failure. */
final class Calls {
  private Calls() {}

  static <T> CompletionStage<T> guard(Supplier<CompletionStage<T>> call) {
    try {
      return call.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }
}
