package io.kvrouter.bench.transport;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.kvrouter.api.ReasonTrailer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** One unary call over a plain grpc-java channel (no stubs), with the response headers kept. */
public final class Unary {
  static final Metadata.Key<String> SERVER = Metadata.Key.of("server", Metadata.ASCII_STRING_MARSHALLER);

  /** The answer and the response headers of a successful call. */
  public record Answer<R>(R message, Metadata headers) {}

  private Unary() {}

  static <Q, R> Answer<R> call(Channel channel, MethodDescriptor<Q, R> method, Q request, Duration timeout) {
    ClientCall<Q, R> call = channel.newCall(method,
        CallOptions.DEFAULT.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS));
    CompletableFuture<Answer<R>> done = start(call, request);
    try {
      return done.get(timeout.toMillis() + 1_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof StatusRuntimeException status) {
        throw status;
      }
      throw new IllegalStateException(e.getCause());
    } catch (TimeoutException e) {
      call.cancel("timed out", null);
      throw Status.DEADLINE_EXCEEDED.withDescription("no answer").asRuntimeException();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.asRuntimeException();
    }
  }

  /** Starts {@code call} with {@code request}: completes with the answer, or fails with the call's status. */
  public static <Q, R> CompletableFuture<Answer<R>> start(ClientCall<Q, R> call, Q request) {
    CompletableFuture<Answer<R>> done = new CompletableFuture<>();
    call.start(new ClientCall.Listener<>() {
      private Metadata headers = new Metadata();
      private R message;

      @Override
      public void onHeaders(Metadata headers) {
        this.headers = headers;
      }

      @Override
      public void onMessage(R message) {
        this.message = message;
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        if (status.isOk() && message != null) {
          done.complete(new Answer<>(message, headers));
        } else if (status.isOk()) {
          done.completeExceptionally(Status.INTERNAL.withDescription("OK without a message").asRuntimeException());
        } else {
          done.completeExceptionally(status.asRuntimeException(trailers));
        }
      }
    }, new Metadata());
    call.request(2);
    call.sendMessage(request);
    call.halfClose();
    return done;
  }

  static String describe(StatusRuntimeException e) {
    Metadata trailers = e.getTrailers();
    String reason = ReasonTrailer.of(trailers);
    return e.getStatus().getCode() + (reason == null ? "" : " " + reason)
        + (e.getStatus().getDescription() == null ? "" : ": " + e.getStatus().getDescription());
  }
}
