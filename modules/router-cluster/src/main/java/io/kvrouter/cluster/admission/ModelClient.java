package io.kvrouter.cluster.admission;

import io.kvrouter.cluster.models.ModelSlot;
import io.kvrouter.cluster.replication.ReplicaClient;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.LoadUpdate;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.membership.Registered;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.replication.Staleness;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.SelectionView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;

/**
 * The booking facade of one model in one region: every command to the model's admission actor there, with the ask's
 * timeout taken from the caller's remaining deadline, and the Book lifecycle ({@link BookCall}: CancelBook on a
 * timeout, cancel or abandon). The same class serves this node's region (through the shard region, or straight to the
 * actor while it runs on this node) and another region (through that data center's sharding proxy); a client is
 * cheap, look one up per call ({@code RouterCluster.client}).
 *
 * <p>In this node's region the client also keeps the node's view in step. Read-your-writes: a Book, Release,
 * MarkPrefillDone or Renew answer carries the booked rank's new load record, which the client writes into the node's
 * view (when the view is of the answer's epoch; cells keep the newest record) before it completes, so the caller's
 * next Select on this node sees its own booking; a Register, Deregister or SetPolicy reply carries the new view, which
 * the node adopts before the call completes. And a model this node has no view of is unknown without asking anyone
 * (except for Register, which creates it). In another region the actor there decides, and a call it does not answer
 * in time is UNAVAILABLE REGION_UNREACHABLE.
 */
public final class ModelClient {
  /** Continuations are one cheap mapping each: run them on the thread that completes the ask. */
  private static final java.util.concurrent.Executor SAME_THREAD = Runnable::run;

  private final String model;
  /** The region of the admission actor this client reaches. */
  private final String region;
  private final boolean thisRegion;
  /** Makes {@link #entity}: a shard region's reference costs an allocation and the id's URL encoding. */
  private final Supplier<EntityRef<ModelAdmission.Command>> entityRef;
  /**
   * The actor through the shard region (or proxy), made on first use: calls to an actor on this node, and relayed
   * calls once the relay has the model's channel, need none. Racing first uses may each make one; either serves.
   */
  private volatile EntityRef<ModelAdmission.Command> entity;
  /** The node's slot of the model when this client is of its region and the node knows the model, else null. */
  private final ModelSlot<ModelAdmission.Command> slot;
  private final Scheduler scheduler;
  private final AdmissionConfig config;
  private final ReplicaClient replicas;
  /** This node's address and region, as {@link #state} and {@link #explainRecent} report them. */
  private final String selfAddress;
  private final String selfRegion;
  /**
   * How a Book and its mutations reach the actor on another node (of this region or another): null, an ask each
   * ({@link BookRelay}).
   */
  private final BookRelay relay;

  public ModelClient(String model, String region, Supplier<EntityRef<ModelAdmission.Command>> entityRef,
      ModelSlot<ModelAdmission.Command> slot, Scheduler scheduler, AdmissionConfig config, ReplicaClient replicas,
      String selfAddress, String selfRegion, BookRelay relay) {
    this.model = model;
    this.region = region;
    this.thisRegion = region.equals(selfRegion);
    this.entityRef = entityRef;
    this.slot = thisRegion && slot != null && slot.isKnown() ? slot : null;
    this.scheduler = scheduler;
    this.config = config;
    this.replicas = replicas;
    this.selfAddress = selfAddress;
    this.selfRegion = selfRegion;
    this.relay = relay;
  }

  public String model() {
    return model;
  }

  /** The region whose admission actor this client reaches. */
  public String region() {
    return region;
  }

  /**
   * Whether calls go to the actor: always in another region (it decides); in this node's region, while the node's
   * view of the model has a worker.
   */
  public boolean isKnown() {
    return !thisRegion || (slot != null && slot.isKnown());
  }

  /** The node's view of the model, or null (another region's client, or a model the node does not know). */
  public SelectionView view() {
    return slot == null ? null : slot.view();
  }

  /** Whether the model's admission actor runs on this node now (its views lag nothing here). */
  public boolean hostsAdmission() {
    return slot != null && slot.hostsAdmission();
  }

  /**
   * The advisory pick from this node's view ({@link ModelSlot#select}): books nothing and never asks the actor. A
   * model this node has no view of: NOT_FOUND.
   */
  public SelectionResult selectWithoutAdmission(SelectionRequest request) {
    if (slot == null) {
      throw RoutingError.unknownModel(model).toException();
    }
    return slot.select(slot.view(), request);
  }

  /**
   * Books {@code request} through the admission actor ({@link BookCall#start}: the ask's timeout, CancelBook on a
   * timeout, cancel or abandon, DEADLINE_TOO_SHORT); the answer's load record is applied to this node's view first.
   * The actor bounds a queue wait by the ask's timeout, on its own clock.
   *
   * @param remaining the caller's remaining deadline, or null when it sent none
   */
  public BookCall book(SelectionRequest request, Duration remaining) {
    if (!isKnown()) {
      return BookCall.failed(RoutingError.unknownModel(model).toException());
    }
    return BookCall.start(request, remaining, config, this::tell, (nonce, timeout) -> sendBook(request, nonce, timeout),
        failure -> mapFailure(failure, remaining), this::applied);
  }

  /**
   * A Book to the actor here, else through this node's relay when it has one, else by an ask through the region (or
   * the other region's proxy).
   */
  private CompletionStage<ModelAdmission.BookReply> sendBook(SelectionRequest request, long nonce, Duration timeout) {
    if (relay != null && (slot == null || slot.localAdmission() == null)) {
      return relay.book(model, region, this::entity, request, nonce, timeout);
    }
    return send(replyTo -> new ModelAdmission.Book(request, nonce, timeout.toMillis(), replyTo), timeout);
  }

  public CompletionStage<MutationResult> release(String requestId, long attempt, Duration remaining) {
    return mutate(ModelAdmission.MutationKind.RELEASE, requestId, attempt,
        replyTo -> new ModelAdmission.Release(requestId, attempt, replyTo), remaining);
  }

  public CompletionStage<MutationResult> markPrefillDone(String requestId, long attempt, Duration remaining) {
    return mutate(ModelAdmission.MutationKind.MARK_PREFILL_DONE, requestId, attempt,
        replyTo -> new ModelAdmission.MarkPrefillDone(requestId, attempt, replyTo), remaining);
  }

  public CompletionStage<MutationResult> renew(String requestId, long attempt, Duration remaining) {
    return mutate(ModelAdmission.MutationKind.RENEW, requestId, attempt,
        replyTo -> new ModelAdmission.Renew(requestId, attempt, replyTo), remaining);
  }

  /**
   * A fenced mutation: to the actor here, else through this node's relay when it has one (as {@link #sendBook}),
   * else by an ask; an unknown model's bookings are unknown too: not applied.
   */
  private CompletionStage<MutationResult> mutate(ModelAdmission.MutationKind kind, String requestId, long attempt,
      org.apache.pekko.japi.function.Function<ActorRef<ModelAdmission.MutationReply>, ModelAdmission.Command> message,
      Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.completedFuture(MutationResult.NOT_APPLIED);
    }
    if (relay != null && (slot == null || slot.localAdmission() == null)) {
      CompletableFuture<MutationResult> result = new CompletableFuture<>();
      relay.mutate(model, region, this::entity, kind, requestId, attempt, config.askTimeout(remaining))
          .whenCompleteAsync(complete(result, remaining, this::applied), SAME_THREAD);
      return result;
    }
    return ask(message, remaining, reply -> applied(reply.result()));
  }

  /** {@code result} after its loads were written into this node's view. */
  private MutationResult applied(MutationResult result) {
    if (result.load() != null) {
      apply(result.load());
    }
    if (result.decodeLoad() != null) {
      apply(result.decodeLoad());
    }
    return result;
  }

  private BookingAnswer applied(BookingAnswer answer) {
    apply(answer.loadUpdate());
    if (answer.decodeLoadUpdate() != null) {
      apply(answer.decodeLoadUpdate());
    }
    return answer;
  }

  /** Writes a load record the actor answered into this node's view, if the view is of the same incarnation. */
  private void apply(LoadUpdate update) {
    SelectionView current = view();
    if (current != null && current.epoch() == update.epoch()) {
      int index = current.indexOf(update.rank());
      if (index >= 0) {
        current.cell(index).apply(update.load());
      }
    }
  }

  /**
   * Always through the shard region (or proxy), never straight to a local actor: a Register may race the model's
   * passivation (its last worker just left), and while the shard passivates the actor it buffers the Register and
   * starts the next incarnation with it, whereas one sent straight to the actor could land after its stop and be lost.
   */
  public CompletionStage<Registered> register(WorkerConfig worker, Duration remaining) {
    CompletableFuture<ModelAdmission.RegisterReply> reply = new CompletableFuture<>();
    entity().<ModelAdmission.RegisterReply>ask(replyTo -> new ModelAdmission.Register(worker, replyTo),
        config.askTimeout(remaining)).whenCompleteAsync(complete(reply, remaining, Function.identity()), SAME_THREAD);
    return adoptingView(reply, r -> r instanceof ModelAdmission.WorkerRegistered registered ? registered.view() : null,
        r -> accepted(r, ModelAdmission.WorkerRegistered.class).registered());
  }

  /** Returns how many live bookings were dropped with the worker. */
  public CompletionStage<Integer> deregister(String workerId, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(WorkerConfig.unknownWorker(model, workerId));
    }
    return adoptingView(this.<ModelAdmission.DeregisterReply, ModelAdmission.DeregisterReply>ask(
            replyTo -> new ModelAdmission.Deregister(workerId, replyTo), remaining, Function.identity()),
        r -> r instanceof ModelAdmission.WorkerDeregistered deregistered ? deregistered.view() : null,
        r -> accepted(r, ModelAdmission.WorkerDeregistered.class).droppedBookings());
  }

  public CompletionStage<Void> reportLoad(String workerId, List<RankReport> ranks, Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(RoutingError.unknownModel(model).toException());
    }
    return this.<ModelAdmission.LoadReply, Void>ask(
        replyTo -> new ModelAdmission.ReportLoad(workerId, ranks, replyTo), remaining, reply -> {
          accepted(reply, ModelAdmission.LoadApplied.class);
          return null;
        });
  }

  public CompletionStage<ModelAdmission.PolicyChanged> setPolicy(String policy, Map<String, String> parameters,
      Duration remaining) {
    if (!isKnown()) {
      return CompletableFuture.failedFuture(RoutingError.unknownModel(model).toException());
    }
    return adoptingView(this.<ModelAdmission.PolicyReply, ModelAdmission.PolicyReply>ask(
            replyTo -> new ModelAdmission.SetPolicy(policy, parameters, replyTo), remaining, Function.identity()),
        r -> r instanceof ModelAdmission.PolicyChanged changed ? changed.view() : null,
        r -> accepted(r, ModelAdmission.PolicyChanged.class));
  }

  /** The reply as the type a command answers when it is accepted; a refusal is thrown as its error. */
  private static <T> T accepted(Object reply, Class<T> type) {
    if (reply instanceof ModelAdmission.Refused refused) {
      throw refused.error().toException();
    }
    return type.cast(reply);
  }

  /**
   * Completes with {@code onReply} of the reply once this node has adopted the view the reply carried (this node's
   * region only: it keeps no view of another region's models).
   */
  private <R, T> CompletionStage<T> adoptingView(CompletionStage<R> reply, Function<R, ViewState> view,
      Function<R, T> onReply) {
    CompletableFuture<T> result = new CompletableFuture<>();
    reply.whenCompleteAsync((r, failure) -> {
      if (failure != null) {
        result.completeExceptionally(failure);
        return;
      }
      // the call took effect whether or not the view could be adopted here (replication brings it anyway)
      CompletionStage<?> adopted = thisRegion ? replicas.adopt(view.apply(r)) : CompletableFuture.completedFuture(null);
      adopted.whenCompleteAsync((done, ignored) -> {
        try {
          result.complete(onReply.apply(r));
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
        }
      }, SAME_THREAD);
    }, SAME_THREAD);
    return result;
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
            return CompletableFuture.completedFuture(new ModelStateReport(snapshot, reply.hostNode(), selfRegion,
                new Staleness(snapshot.epoch(), snapshot.viewVersion(), reply.replicationSeq(), 0, 0, false)));
          }
          return replicas.staleness(model).thenApply(staleness ->
              new ModelStateReport(snapshot, reply.hostNode(), selfRegion, staleness));
        });
  }

  /** The snapshot of the model's admission state alone. */
  public CompletionStage<ModelSnapshot> snapshot(Duration remaining) {
    return state(remaining).thenApply(ModelStateReport::snapshot);
  }

  /** This node's staleness of its copy of the model (null when it keeps none), read from its replica actor. */
  public CompletionStage<Staleness> replicaStaleness(Duration timeout) {
    return replicas.staleness(model, timeout);
  }

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
    if (slot != null && slot.decisions() != null) {
      slot.decisions().newest(limit).forEach(d -> here.add(d.explain(selfAddress)));
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

  private <R, T> CompletionStage<T> ask(org.apache.pekko.japi.function.Function<ActorRef<R>, ModelAdmission.Command>
      message, Duration remaining, Function<R, T> onReply) {
    CompletableFuture<T> result = new CompletableFuture<>();
    send(message, config.askTimeout(remaining)).whenCompleteAsync(complete(result, remaining, onReply), SAME_THREAD);
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

  private EntityRef<ModelAdmission.Command> entity() {
    EntityRef<ModelAdmission.Command> made = entity;
    if (made == null) {
      made = entityRef.get();
      entity = made;
    }
    return made;
  }

  /** Asks the actor directly while it runs on this node, else through the shard region or proxy. */
  private <R> CompletionStage<R> send(
      org.apache.pekko.japi.function.Function<ActorRef<R>, ModelAdmission.Command> message, Duration timeout) {
    ActorRef<ModelAdmission.Command> here = slot == null ? null : slot.localAdmission();
    return here != null ? AskPattern.ask(here, message, timeout, scheduler) : entity().ask(message, timeout);
  }

  private void tell(ModelAdmission.Command command) {
    ActorRef<ModelAdmission.Command> here = slot == null ? null : slot.localAdmission();
    if (here != null) {
      here.tell(command);
    } else {
      entity().tell(command);
    }
  }

  /**
   * An ask's failure as the caller sees it: its timeout is ADMISSION_TIMEOUT in this node's region (DEADLINE_EXCEEDED
   * when the caller set a deadline, else UNAVAILABLE) and REGION_UNREACHABLE in another; other failures as they are.
   */
  private Throwable mapFailure(Throwable failure, Duration remaining) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    if (!(cause instanceof TimeoutException)) {
      return cause;
    }
    if (!thisRegion) {
      return unreachable(region, model, "did not answer in time").toException();
    }
    RoutingError.Code code = remaining != null ? RoutingError.Code.DEADLINE_EXCEEDED : RoutingError.Code.UNAVAILABLE;
    return new RoutingException(new RoutingError(code, RoutingError.ADMISSION_TIMEOUT,
        "admission for model '" + RoutingError.echo(model) + "' did not answer in time"));
  }

  static RoutingError unreachable(String region, String model, String what) {
    return RoutingError.unavailable(RoutingError.REGION_UNREACHABLE, "region " + RoutingError.echo(region)
        + " " + what + " (model '" + RoutingError.echo(model) + "')");
  }
}
