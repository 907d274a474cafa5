package io.kvrouter.cluster;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.admission.RankReport;
import io.kvrouter.core.admission.Registered;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;

/**
 * The per-model facade. {@link #selectWithoutAdmission} runs inline on the caller's thread from the node's view and
 * never enters the mailbox; everything that changes state goes to the model's admission actor, with ask timeouts
 * taken from the caller's remaining deadline.
 */
public final class ModelClient {
  /** Continuations are one cheap mapping each: run them on the thread that completes the ask. */
  private static final Executor SAME_THREAD = Runnable::run;

  private final String model;
  private final EntityRef<ModelAdmission.Command> entity;
  /** The model's admission actor while it runs on this node (see {@link LocalAdmissions}), else null. */
  private final AtomicReference<ActorRef<ModelAdmission.Command>> local;
  private final Scheduler scheduler;
  private final AtomicReference<SelectionView> view;
  private final Clock clock;
  /** The clock as the selection reads it: lazily, only to check a heartbeat. */
  private final LongSupplier millis;
  private final AdmissionConfig config;

  ModelClient(String model, EntityRef<ModelAdmission.Command> entity,
      AtomicReference<ActorRef<ModelAdmission.Command>> local, Scheduler scheduler, AtomicReference<SelectionView> view,
      Clock clock, AdmissionConfig config) {
    this.model = model;
    this.entity = entity;
    this.local = local;
    this.scheduler = scheduler;
    this.view = view;
    this.clock = clock;
    this.millis = clock::millis;
    this.config = config;
  }

  public String model() {
    return model;
  }

  /** The node's current view of the model, or null if it has none. */
  public SelectionView view() {
    return view.get();
  }

  /** A model is known while it has at least one registered worker. */
  public boolean isKnown() {
    SelectionView current = view.get();
    return current != null && !current.isEmpty();
  }

  /** The advisory pick: read the view, project loads into this thread's scratch, pick under the picker lock. */
  public SelectionResult selectWithoutAdmission(SelectionRequest request) {
    return Selector.select(view.get(), request, Candidates.forCurrentThread(), millis);
  }

  /**
   * A Book in progress: completes with its answer. Cancelling it before the answer, or {@link #abandon}ing it at any
   * time, undoes what the Book made (its queue entry or its booking) with a CancelBook carrying its nonce.
   */
  public static final class BookCall extends CompletableFuture<BookingAnswer> {
    private final Runnable cancelBook;

    private BookCall(Runnable cancelBook) {
      this.cancelBook = cancelBook;
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

  /**
   * Books {@code request} through the admission actor. The ask ends {@code deadline-margin} before the caller's
   * deadline (or after the configured ask timeout without one); if it times out, or the returned future is cancelled
   * or abandoned, a CancelBook with this call's nonce undoes whatever the Book made. A caller with no more time left
   * than the margin has given up already: it is rejected with DEADLINE_EXCEEDED (DEADLINE_TOO_SHORT), no ask sent.
   *
   * @param remaining the caller's remaining deadline, or null when it sent none
   */
  public BookCall book(SelectionRequest request, Duration remaining) {
    long nonce = ThreadLocalRandom.current().nextLong();
    BookCall result = new BookCall(() -> tell(new ModelAdmission.CancelBook(request.requestId(), nonce)));
    if (!isKnown()) {
      result.completeExceptionally(RoutingError.unknownModel(model).toException());
      return result;
    }
    if (remaining != null && remaining.compareTo(config.deadlineMargin()) <= 0) {
      result.completeExceptionally(new RoutingException(new RoutingError(RoutingError.Code.DEADLINE_EXCEEDED,
          RoutingError.DEADLINE_TOO_SHORT, "the call's deadline (" + remaining.toMillis() + " ms left) leaves no "
              + "time beyond the deadline margin (" + config.deadlineMargin().toMillis() + " ms) to book")));
      return result;
    }
    Duration timeout = askTimeout(remaining);
    long deadlineMillis = clock.millis() + timeout.toMillis();
    this.<ModelAdmission.BookReply>send(replyTo -> new ModelAdmission.Book(request, nonce, deadlineMillis, replyTo),
            timeout)
        .whenCompleteAsync((reply, failure) -> {
          if (failure != null) {
            result.cancelBook.run();
            result.completeExceptionally(mapFailure(failure, remaining));
          } else if (reply.error() != null) {
            result.completeExceptionally(reply.error().toException());
          } else if (!result.complete(reply.answer())) {
            // the caller cancelled while the ask was in flight: undo the booking made for it
            result.cancelBook.run();
          }
        }, SAME_THREAD);
    result.whenComplete((answer, failure) -> {
      if (result.isCancelled()) {
        result.cancelBook.run();
      }
    });
    return result;
  }

  public CompletionStage<MutationResult> release(String requestId, long attempt, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.completedFuture(MutationResult.NOT_APPLIED);
    }
    return this.<MutationResult, MutationResult>ask(replyTo -> new ModelAdmission.Release(requestId, attempt, replyTo), remaining, Function.identity());
  }

  public CompletionStage<MutationResult> markPrefillDone(String requestId, long attempt, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.completedFuture(MutationResult.NOT_APPLIED);
    }
    return this.<MutationResult, MutationResult>ask(replyTo -> new ModelAdmission.MarkPrefillDone(requestId, attempt, replyTo), remaining,
        Function.identity());
  }

  public CompletionStage<MutationResult> renew(String requestId, long attempt, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.completedFuture(MutationResult.NOT_APPLIED);
    }
    return this.<MutationResult, MutationResult>ask(replyTo -> new ModelAdmission.Renew(requestId, attempt, replyTo), remaining, Function.identity());
  }

  /**
   * Always through the shard region, never straight to a local actor: a Register may race the model's passivation
   * (its last worker just left), and while the shard passivates the actor it buffers the Register and starts the next
   * incarnation with it, whereas one sent straight to the actor could land after its stop and be lost.
   */
  public CompletionStage<Registered> register(WorkerConfig worker, Duration remaining) {
    CompletableFuture<Registered> result = new CompletableFuture<>();
    entity.<ModelAdmission.RegisterReply>ask(replyTo -> new ModelAdmission.Register(worker, replyTo),
        askTimeout(remaining)).whenCompleteAsync(complete(result, remaining,
            reply -> unwrap(reply.error(), reply.registered())), SAME_THREAD);
    return result;
  }

  /** Returns how many live bookings were dropped with the worker. */
  public CompletionStage<Integer> deregister(String workerId, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(WorkerConfig.unknownWorker(model, workerId));
    }
    return this.<ModelAdmission.DeregisterReply, Integer>ask(replyTo -> new ModelAdmission.Deregister(workerId, replyTo), remaining,
        reply -> unwrap(reply.error(), reply.droppedBookings()));
  }

  public CompletionStage<Void> reportLoad(String workerId, List<RankReport> ranks, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(RoutingError.unknownModel(model).toException());
    }
    return this.<ModelAdmission.Ack, Void>ask(replyTo -> new ModelAdmission.ReportLoad(workerId, ranks, replyTo), remaining,
        reply -> unwrap(reply.error(), null));
  }

  public CompletionStage<ModelAdmission.PolicyReply> setPolicy(String policy, Map<String, String> parameters,
      Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(RoutingError.unknownModel(model).toException());
    }
    return this.<ModelAdmission.PolicyReply, ModelAdmission.PolicyReply>ask(replyTo -> new ModelAdmission.SetPolicy(policy, parameters, replyTo), remaining,
        reply -> unwrap(reply.error(), reply));
  }

  /** The model's admission state, read through the actor. */
  public CompletionStage<ModelSnapshot> state(Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(RoutingError.unknownModel(model).toException());
    }
    return this.<ModelSnapshot, ModelSnapshot>ask(ModelAdmission.GetState::new, remaining, Function.identity());
  }

  private <R, T> CompletionStage<T> ask(org.apache.pekko.japi.function.Function<ActorRef<R>, ModelAdmission.Command>
      message, Duration remaining, Function<R, T> onReply) {
    CompletableFuture<T> result = new CompletableFuture<>();
    send(message, askTimeout(remaining)).whenCompleteAsync(complete(result, remaining, onReply), SAME_THREAD);
    return result;
  }

  /** Completes {@code result} from an ask's reply (mapped by {@code onReply}) or its failure. */
  private <R, T> java.util.function.BiConsumer<R, Throwable> complete(CompletableFuture<T> result, Duration remaining,
      Function<R, T> onReply) {
    return (reply, failure) -> {
      if (failure != null) {
        result.completeExceptionally(mapFailure(failure, remaining));
        return;
      }
      try {
        result.complete(onReply.apply(reply));
      } catch (RuntimeException e) {
        result.completeExceptionally(e);
      }
    };
  }

  /** The model's admission actor while it runs on this node (commands then skip the region), else null. */
  ActorRef<ModelAdmission.Command> localAdmission() {
    return local.get();
  }

  /** Asks the actor directly while it runs on this node, else through the shard region. */
  private <R> CompletionStage<R> send(
      org.apache.pekko.japi.function.Function<ActorRef<R>, ModelAdmission.Command> message, Duration timeout) {
    ActorRef<ModelAdmission.Command> here = local.get();
    return here != null ? AskPattern.ask(here, message, timeout, scheduler) : entity.ask(message, timeout);
  }

  private void tell(ModelAdmission.Command command) {
    ActorRef<ModelAdmission.Command> here = local.get();
    if (here != null) {
      here.tell(command);
    } else {
      entity.tell(command);
    }
  }

  private Duration askTimeout(Duration remaining) {
    if (remaining == null) {
      return config.askTimeout();
    }
    Duration budget = remaining.minus(config.deadlineMargin());
    return budget.compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : budget;
  }

  private static <T> T unwrap(RoutingError error, T value) {
    if (error != null) {
      throw error.toException();
    }
    return value;
  }

  private Throwable mapFailure(Throwable failure, Duration remaining) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    if (cause instanceof TimeoutException) {
      RoutingError.Code code = remaining != null ? RoutingError.Code.DEADLINE_EXCEEDED : RoutingError.Code.UNAVAILABLE;
      return new RoutingException(new RoutingError(code, RoutingError.ADMISSION_TIMEOUT,
          "admission for model '" + model + "' did not answer in time"));
    }
    return cause;
  }
}
