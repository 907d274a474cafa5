package io.kvrouter.cluster.admission;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * A Book in progress: completes with its answer. Cancelling it before the answer, or {@link #abandon}ing it at any
 * time, undoes what the Book made (its queue entry or its booking) with a CancelBook carrying its nonce.
 */
public final class BookCall extends CompletableFuture<BookingAnswer> {
  private static final java.util.concurrent.Executor SAME_THREAD = Runnable::run;
  private final Runnable cancelBook;

  private BookCall(Runnable cancelBook) {
    this.cancelBook = cancelBook;
    // a caller that cancels before the answer leaves nothing behind
    whenComplete((answer, failure) -> {
      if (isCancelled()) {
        cancelBook.run();
      }
    });
  }

  /** A Book refused before anything was sent. */
  static BookCall failed(Throwable failure) {
    BookCall call = new BookCall(() -> {});
    call.completeExceptionally(failure);
    return call;
  }

  /**
   * Sends a Book of {@code request} with a fresh nonce through {@code ask} (given the nonce and the ask's timeout,
   * which ends {@code deadline-margin} before the caller's deadline, or the configured ask timeout without one).
   * If the ask fails (mapped by {@code onFailure}), or the call is cancelled or abandoned, a CancelBook with the
   * nonce, sent by {@code tell}, undoes whatever the Book made. An answer goes through {@code onAnswer} to the
   * caller. A caller with no more time left than the margin has given up already: DEADLINE_EXCEEDED
   * (DEADLINE_TOO_SHORT), nothing sent.
   */
  static BookCall start(SelectionRequest request, Duration remaining, AdmissionConfig config,
      Consumer<ModelAdmission.Command> tell,
      BiFunction<Long, Duration, CompletionStage<ModelAdmission.BookReply>> ask,
      Function<Throwable, Throwable> onFailure, UnaryOperator<BookingAnswer> onAnswer) {
    RoutingException tooShort = config.deadlineTooShort(remaining);
    if (tooShort != null) {
      return failed(tooShort);
    }
    long nonce = ThreadLocalRandom.current().nextLong();
    BookCall call = new BookCall(() -> tell.accept(new ModelAdmission.CancelBook(request.requestId(), nonce)));
    // explicitly on the completing thread: Pekko's ask returns Scala's CompletionStage, whose plain whenComplete runs
    // on the JDK common pool
    ask.apply(nonce, config.askTimeout(remaining)).whenCompleteAsync((reply, failure) -> {
      if (failure != null) {
        call.cancelBook.run();
        call.completeExceptionally(onFailure.apply(failure));
      } else if (reply instanceof ModelAdmission.Refused refused) {
        call.completeExceptionally(refused.error().toException());
      } else if (!call.complete(onAnswer.apply(((ModelAdmission.Booked) reply).answer()))) {
        // the caller cancelled while the ask was in flight: undo the booking made for it
        call.cancelBook.run();
      }
    }, SAME_THREAD);
    return call;
  }

  /**
   * The caller will never see the answer: frees the booking even when it was already answered (a binding that
   * learns of a cancelled call before it wrote the answer calls this). A no-op once a replay re-bound the booking.
   */
  public void abandon() {
    if (!cancel(false) && !isCompletedExceptionally()) {
      cancelBook.run();
    }
  }
}
