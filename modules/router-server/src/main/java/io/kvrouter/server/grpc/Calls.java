package io.kvrouter.server.grpc;

import io.kvrouter.server.metrics.RouterMetrics;
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

  /** As {@link #guard}, a failure also counted as a rejection of {@code method} ({@code kvrouter_rejections_total}). */
  static <T> CompletionStage<T> counted(RouterMetrics metrics, String method, Supplier<CompletionStage<T>> call) {
    CompletionStage<T> stage = guard(call);
    stage.whenComplete((done, failure) -> {
      if (failure != null) {
        metrics.rejected(method, failure);
      }
    });
    return stage;
  }
}
