package io.kvrouter.cluster;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.LoadUpdate;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.membership.Registered;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.replication.Staleness;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.explain.Decision;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.DecisionLog;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;

/**
 * The per-model facade. {@link #selectWithoutAdmission} runs inline on the caller's thread from the node's view and
 * never enters the mailbox; everything that changes state goes to the model's admission actor (straight to it while
 * it runs on this node, else through the shard region), with ask timeouts taken from the caller's remaining deadline.
 *
 * <p>Read-your-writes: a Book, Release, MarkPrefillDone or Renew answer carries the booked rank's new load record,
 * which this facade writes into its node's view (when the view is of the answer's epoch; cells keep the newest record)
 * before it completes, so the caller's next Select on this node sees its own booking. A Register, Deregister or
 * SetPolicy reply carries the new view, which this node adopts before the call completes.
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
  private final NodeReplicas replicas;
  /** This node's address and region, as {@link #state} reports them. */
  private final String selfAddress;
  private final String region;
  /** This node's decisions for the model (explain), or null: recording is off, or the facade is a throwaway. */
  private final DecisionLog decisions;

  ModelClient(String model, EntityRef<ModelAdmission.Command> entity,
      AtomicReference<ActorRef<ModelAdmission.Command>> local, Scheduler scheduler, AtomicReference<SelectionView> view,
      Clock clock, AdmissionConfig config, NodeReplicas replicas, String selfAddress, String region,
      DecisionLog decisions) {
    this.decisions = decisions;
    this.replicas = replicas;
    this.selfAddress = selfAddress;
    this.region = region;
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

  /**
   * The advisory pick: read the view, project loads into this thread's scratch, pick under the picker lock. With
   * explain on, the decision is recorded: a compact copy of the scratch into a reused buffer, rendered when read.
   */
  public SelectionResult selectWithoutAdmission(SelectionRequest request) {
    SelectionView current = view.get();
    Candidates scratch = Candidates.forCurrentThread();
    SelectionResult result = Selector.select(current, request, scratch, millis);
    if (decisions != null) {
      decisions.record(DecisionKind.SELECT, current, request, scratch, clock.millis());
    }
    return result;
  }

  /** An advisory pick with its explanation, for a caller that asked for it (recorded like any other). */
  public ExplainedSelection selectExplained(SelectionRequest request) {
    SelectionView current = view.get();
    Candidates scratch = Candidates.forCurrentThread();
    SelectionResult result = Selector.select(current, request, scratch, millis);
    long now = clock.millis();
    if (decisions != null) {
      decisions.record(DecisionKind.SELECT, current, request, scratch, now);
    }
    return new ExplainedSelection(result,
        Decision.capture(DecisionKind.SELECT, current, request, scratch, now).explain(selfAddress));
  }

  public record ExplainedSelection(SelectionResult result, Explanation explanation) {}

  /** The newest decisions one node can tell about a model, newest first; {@code node} is that node's address. */
  public record ExplainReport(String model, String node, List<Explanation> decisions) {}

  /**
   * The newest decisions about the model ({@code limit} 0: all kept): this node's Selects, and the Books of the
   * model's admission actor, this node's own when it hosts the actor, else read from the actor (one ask, like
   * {@link #state}). Without recording on this node, its Selects are missing; without it on the host, the Books.
   */
  public CompletionStage<ExplainReport> explainRecent(int limit, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(RoutingError.unknownModel(model).toException());
    }
    List<Explanation> here = new ArrayList<>();
    if (decisions != null) {
      decisions.newest(limit).forEach(d -> here.add(d.explain(selfAddress)));
    }
    if (hostsAdmission()) {
      return CompletableFuture.completedFuture(new ExplainReport(model, selfAddress, here));
    }
    return this.<ModelAdmission.BookDecisionsReply, ExplainReport>ask(
        replyTo -> new ModelAdmission.GetBookDecisions(limit, replyTo), remaining, reply -> {
          List<Explanation> merged = new ArrayList<>(here);
          merged.addAll(reply.decisions());
          merged.sort(Comparator.comparingLong(Explanation::unixMs).reversed());
          int kept = limit <= 0 ? merged.size() : Math.min(limit, merged.size());
          return new ExplainReport(model, selfAddress, List.copyOf(merged.subList(0, kept)));
        });
  }

  /**
   * A Book in progress: completes with its answer. Cancelling it before the answer, or {@link #abandon}ing it at any
   * time, undoes what the Book made (its queue entry or its booking) with a CancelBook carrying its nonce.
   */
  public static final class BookCall extends CompletableFuture<BookingAnswer> {
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
      ask.apply(nonce, config.askTimeout(remaining)).whenComplete((reply, failure) -> {
        if (failure != null) {
          call.cancelBook.run();
          call.completeExceptionally(onFailure.apply(failure));
        } else if (reply.error() != null) {
          call.completeExceptionally(reply.error().toException());
        } else if (!call.complete(onAnswer.apply(reply.answer()))) {
          // the caller cancelled while the ask was in flight: undo the booking made for it
          call.cancelBook.run();
        }
      });
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

  /**
   * Books {@code request} through the admission actor ({@link BookCall#start}: the ask's timeout, CancelBook on a
   * timeout, cancel or abandon, DEADLINE_TOO_SHORT); the answer's load record is applied to this node's view first.
   *
   * @param remaining the caller's remaining deadline, or null when it sent none
   */
  public BookCall book(SelectionRequest request, Duration remaining) {
    if (!isKnown()) {
      return BookCall.failed(RoutingError.unknownModel(model).toException());
    }
    return BookCall.start(request, remaining, config, this::tell,
        (nonce, timeout) -> this.<ModelAdmission.BookReply>send(replyTo -> new ModelAdmission.Book(request, nonce,
            clock.millis() + timeout.toMillis(), replyTo), timeout),
        failure -> mapFailure(failure, remaining), this::applied);
  }

  public CompletionStage<MutationResult> release(String requestId, long attempt, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.completedFuture(MutationResult.NOT_APPLIED);
    }
    return this.<ModelAdmission.MutationReply, MutationResult>ask(
        replyTo -> new ModelAdmission.Release(requestId, attempt, replyTo), remaining, this::applied);
  }

  public CompletionStage<MutationResult> markPrefillDone(String requestId, long attempt, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.completedFuture(MutationResult.NOT_APPLIED);
    }
    return this.<ModelAdmission.MutationReply, MutationResult>ask(
        replyTo -> new ModelAdmission.MarkPrefillDone(requestId, attempt, replyTo), remaining, this::applied);
  }

  public CompletionStage<MutationResult> renew(String requestId, long attempt, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.completedFuture(MutationResult.NOT_APPLIED);
    }
    return this.<ModelAdmission.MutationReply, MutationResult>ask(
        replyTo -> new ModelAdmission.Renew(requestId, attempt, replyTo), remaining, this::applied);
  }

  private BookingAnswer applied(BookingAnswer answer) {
    apply(new LoadUpdate(answer.epoch(), answer.selection().rank(), answer.selection().load()));
    return answer;
  }

  private MutationResult applied(ModelAdmission.MutationReply reply) {
    MutationResult result = reply.result();
    if (result.load() != null) {
      apply(result.load());
    }
    return result;
  }

  /** Writes a load record the actor answered into this node's view, if the view is of the same incarnation. */
  private void apply(LoadUpdate update) {
    SelectionView current = view.get();
    if (current != null && current.epoch() == update.epoch()) {
      int index = current.indexOf(update.rank());
      if (index >= 0) {
        current.cell(index).apply(update.load());
      }
    }
  }

  /**
   * Always through the shard region, never straight to a local actor: a Register may race the model's passivation
   * (its last worker just left), and while the shard passivates the actor it buffers the Register and starts the next
   * incarnation with it, whereas one sent straight to the actor could land after its stop and be lost.
   */
  public CompletionStage<Registered> register(WorkerConfig worker, Duration remaining) {
    CompletableFuture<ModelAdmission.RegisterReply> reply = new CompletableFuture<>();
    entity.<ModelAdmission.RegisterReply>ask(replyTo -> new ModelAdmission.Register(worker, replyTo),
        askTimeout(remaining)).whenCompleteAsync(complete(reply, remaining, Function.identity()), SAME_THREAD);
    return adoptingView(reply, ModelAdmission.RegisterReply::view,
        r -> unwrap(r.error(), r.registered()));
  }

  /** Returns how many live bookings were dropped with the worker. */
  public CompletionStage<Integer> deregister(String workerId, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(WorkerConfig.unknownWorker(model, workerId));
    }
    return adoptingView(this.<ModelAdmission.DeregisterReply, ModelAdmission.DeregisterReply>ask(
            replyTo -> new ModelAdmission.Deregister(workerId, replyTo), remaining, Function.identity()),
        ModelAdmission.DeregisterReply::view, reply -> unwrap(reply.error(), reply.droppedBookings()));
  }

  /** Completes with {@code onReply} of the reply once this node has adopted the view the reply carried. */
  private <R, T> CompletionStage<T> adoptingView(CompletionStage<R> reply, Function<R, ViewState> view,
      Function<R, T> onReply) {
    CompletableFuture<T> result = new CompletableFuture<>();
    reply.whenComplete((r, failure) -> {
      if (failure != null) {
        result.completeExceptionally(failure);
        return;
      }
      // the call took effect whether or not the view could be adopted here (replication brings it anyway)
      replicas.adopt(view.apply(r)).whenComplete((adopted, ignored) -> {
        try {
          result.complete(onReply.apply(r));
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
        }
      });
    });
    return result;
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
    return adoptingView(this.<ModelAdmission.PolicyReply, ModelAdmission.PolicyReply>ask(
            replyTo -> new ModelAdmission.SetPolicy(policy, parameters, replyTo), remaining, Function.identity()),
        ModelAdmission.PolicyReply::view, reply -> unwrap(reply.error(), reply));
  }

  /**
   * The model's admission state, read through the actor, with the node hosting it, this node's region and this
   * node's staleness (none when the actor runs here).
   */
  public CompletionStage<ModelStateReport> state(Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(RoutingError.unknownModel(model).toException());
    }
    return this.<ModelAdmission.StateReply, ModelAdmission.StateReply>ask(ModelAdmission.GetState::new, remaining,
        Function.identity()).thenCompose(reply -> {
          ModelSnapshot snapshot = reply.snapshot();
          if (reply.hostNode().equals(selfAddress)) {
            return CompletableFuture.completedFuture(new ModelStateReport(snapshot, reply.hostNode(), region,
                new Staleness(snapshot.epoch(), snapshot.viewVersion(), reply.replicationSeq(), 0, 0, false)));
          }
          return replicas.staleness(model).thenApply(staleness ->
              new ModelStateReport(snapshot, reply.hostNode(), region, staleness));
        });
  }

  /** Whether the model's admission actor runs on this node now (its views lag nothing here). */
  public boolean hostsAdmission() {
    return local.get() != null;
  }

  /** This node's staleness of its copy of the model (null when it keeps none), read from its replica actor. */
  public CompletionStage<Staleness> replicaStaleness(Duration timeout) {
    return replicas.staleness(model, timeout);
  }

  /** The snapshot of the model's admission state alone. */
  public CompletionStage<ModelSnapshot> snapshot(Duration remaining) {
    return state(remaining).thenApply(ModelStateReport::snapshot);
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
    return config.askTimeout(remaining);
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
