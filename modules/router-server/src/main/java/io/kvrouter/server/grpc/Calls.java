package io.kvrouter.server.grpc;

import io.kvrouter.server.metrics.RouterMetrics;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The one path every service's rejections take: a rejection thrown while a call is set up becomes a failed stage, and
 * every failure is counted ({@code kvrouter_rejections_total}) and, when it is bad input (INVALID_ARGUMENT), logged
 * ({@link RejectionLog}, rate-limited).
 */
final class Calls {
  private Calls() {}

  static <T> CompletionStage<T> guard(Supplier<CompletionStage<T>> call) {
    try {
      return call.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** As {@link #guard}, a failure also counted and logged as a rejection of {@code method}. */
  static <T> CompletionStage<T> counted(RouterMetrics metrics, String method, Supplier<CompletionStage<T>> call) {
    return whenRejected(metrics, method, guard(call));
  }

  /** Counts and logs {@code call}'s failure, if it fails; returns {@code call} itself (a binding may cancel it). */
  static <T> CompletionStage<T> whenRejected(RouterMetrics metrics, String method, CompletionStage<T> call) {
    call.whenComplete((done, failure) -> {
      if (failure != null) {
        rejected(metrics, method, failure);
      }
    });
    return call;
  }

  /** Counts a rejection of {@code method}; bad input (INVALID_ARGUMENT) is also logged, rate-limited. */
  static void rejected(RouterMetrics metrics, String method, Throwable failure) {
    metrics.rejected(method, failure);
    RejectionLog.invalidArgument(method, failure);
  }
}
