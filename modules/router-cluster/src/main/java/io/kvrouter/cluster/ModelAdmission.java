package io.kvrouter.cluster;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.Completion;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.admission.RankReport;
import io.kvrouter.core.admission.Registered;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * The admission actor of one model (a Cluster Sharding entity, id = model name). A thin shell around
 * {@link AdmissionState}: every command is one call on it, the reply goes out after the state (and with it the load
 * cells and the published view) has changed. Sharding never passivates it for idleness (a model with workers may
 * receive only Selects, which never reach it); it passivates itself once its model holds nothing.
 */
public final class ModelAdmission extends AbstractBehavior<ModelAdmission.Command> {

  public static final EntityTypeKey<Command> ENTITY_KEY = EntityTypeKey.create(Command.class, "ModelAdmission");

  public sealed interface Command extends CborSerializable {}

  public record Register(WorkerConfig config, ActorRef<RegisterReply> replyTo) implements Command {}

  public record Deregister(String workerId, ActorRef<DeregisterReply> replyTo) implements Command {}

  public record ReportLoad(String workerId, List<RankReport> ranks, ActorRef<Ack> replyTo) implements Command {}

  public record SetPolicy(String policy, Map<String, String> parameters, ActorRef<PolicyReply> replyTo)
      implements Command {}

  /** {@code deadlineMillis} is on the admission clock (0: none); {@code nonce} identifies this call for CancelBook. */
  public record Book(SelectionRequest request, long nonce, long deadlineMillis, ActorRef<BookReply> replyTo)
      implements Command {}

  public record CancelBook(String requestId, long nonce) implements Command {}

  public record Release(String requestId, long attempt, ActorRef<MutationResult> replyTo) implements Command {}

  public record MarkPrefillDone(String requestId, long attempt, ActorRef<MutationResult> replyTo)
      implements Command {}

  public record Renew(String requestId, long attempt, ActorRef<MutationResult> replyTo) implements Command {}

  public record GetState(ActorRef<ModelSnapshot> replyTo) implements Command {}

  /** Sent by the actor's timer: expires leases and queued Books past their deadline. */
  public enum ExpireLeases implements Command {
    INSTANCE
  }

  /** Sharding's stop message (passivation, rebalance): sent after the commands already on their way to the actor. */
  public enum Stop implements Command {
    INSTANCE
  }

  public record RegisterReply(Registered registered, RoutingError error) implements CborSerializable {}

  public record DeregisterReply(int droppedBookings, RoutingError error) implements CborSerializable {}

  public record Ack(RoutingError error) implements CborSerializable {}

  public record PolicyReply(String policy, long viewVersion, RoutingError error) implements CborSerializable {}

  public record BookReply(BookingAnswer answer, RoutingError error) implements CborSerializable {}

  /**
   * What the node gives each admission actor it hosts. {@code forget} drops whatever the node keeps for a model (view,
   * facade, KV index, local-actor slot) once its actor has passivated.
   */
  public record Environment(AdmissionSettings settings, Clock clock, ViewRegistry registry,
      Duration expiryInterval, Function<String, KvOverlapSource> kvIndex, LocalAdmissions locals,
      Consumer<String> forget) {}

  private final AdmissionState state;
  private final Map<Long, ActorRef<BookReply>> queued = new HashMap<>();
  private final LocalAdmissions locals;
  private final ActorRef<ClusterSharding.ShardCommand> shard;
  private final Environment env;

  /** @param shard the entity's shard, which passivates it */
  public static Behavior<Command> create(String model, ActorRef<ClusterSharding.ShardCommand> shard, Environment env) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
      timers.startTimerWithFixedDelay(ExpireLeases.INSTANCE, env.expiryInterval());
      return new ModelAdmission(ctx, model, shard, env);
    }));
  }

  private ModelAdmission(ActorContext<Command> context, String model, ActorRef<ClusterSharding.ShardCommand> shard,
      Environment env) {
    super(context);
    this.locals = env.locals();
    this.shard = shard;
    this.env = env;
    // attempt floor 0: attempts are time-ordered; a replicated ledger will hand a new incarnation its floor
    this.state = new AdmissionState(model, env.settings(), env.clock(), env.kvIndex().apply(model),
        env.registry()::publish, 0);
    locals.started(model, context.getSelf());
    context.getLog().debug("admission for model '{}' started", model);
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder()
        .onMessage(Register.class, this::onRegister)
        .onMessage(Deregister.class, this::onDeregister)
        .onMessage(ReportLoad.class, this::onReportLoad)
        .onMessage(SetPolicy.class, this::onSetPolicy)
        .onMessage(Book.class, this::onBook)
        .onMessage(CancelBook.class, this::onCancelBook)
        .onMessage(Release.class, m -> reply(m.replyTo(), state.release(m.requestId(), m.attempt())))
        .onMessage(MarkPrefillDone.class, m -> reply(m.replyTo(), state.markPrefillDone(m.requestId(), m.attempt())))
        .onMessage(Renew.class, m -> reply(m.replyTo(), state.renew(m.requestId(), m.attempt())))
        .onMessage(GetState.class, m -> reply(m.replyTo(), state.snapshot()))
        .onMessageEquals(ExpireLeases.INSTANCE, this::onExpire)
        .onMessageEquals(Stop.INSTANCE, Behaviors::stopped)
        .onSignal(PostStop.class, signal -> {
          locals.stopped(state.model(), getContext().getSelf());
          return this;
        })
        .build();
  }

  private <T> Behavior<Command> reply(ActorRef<T> replyTo, T value) {
    replyTo.tell(value);
    return afterCommand();
  }

  /**
   * Answers the queued Books the command decided, then passivates the actor once its model holds nothing (no
   * worker, booking or queued Book, the clock past its last attempt's millisecond: see
   * {@link AdmissionState#isDisposable}). A model with workers is never passivated, however idle: Selects never
   * reach its actor. The expiry timer calls this too, so a model left empty within its last attempt's millisecond
   * passivates on the next tick.
   */
  private Behavior<Command> afterCommand() {
    answerCompletions();
    if (!state.isDisposable()) {
      return this;
    }
    ActorRef<Command> self = getContext().getSelf();
    // facades fall back to the region, which buffers commands while the shard passivates the actor
    locals.stopped(state.model(), self);
    shard.tell(new ClusterSharding.Passivate<>(self));
    getContext().getLog().debug("admission for model '{}' holds nothing: passivating", state.model());
    return passivating();
  }

  /**
   * Between the Passivate and sharding's Stop: a command already sent straight to this actor goes back through the
   * region, whose shard buffers it and starts the next incarnation with it once this one has stopped. (Until the
   * shard has read the Passivate, the region delivers it here again: it bounces until then.)
   */
  private Behavior<Command> passivating() {
    EntityRef<Command> region = ClusterSharding.get(getContext().getSystem())
        .entityRefFor(ENTITY_KEY, state.model());
    return Behaviors.receive(Command.class)
        .onMessageEquals(Stop.INSTANCE, Behaviors::stopped)
        .onMessageEquals(ExpireLeases.INSTANCE, Behaviors::same)
        .onMessage(Command.class, command -> {
          region.tell(command);
          return Behaviors.same();
        })
        .onSignal(PostStop.class, signal -> {
          locals.stopped(state.model(), getContext().getSelf());
          env.forget().accept(state.model());
          return Behaviors.same();
        })
        .build();
  }

  private Behavior<Command> onRegister(Register m) {
    try {
      return reply(m.replyTo(), new RegisterReply(state.register(m.config()), null));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new RegisterReply(null, e.error()));
    }
  }

  private Behavior<Command> onDeregister(Deregister m) {
    try {
      return reply(m.replyTo(), new DeregisterReply(state.deregister(m.workerId()), null));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new DeregisterReply(0, e.error()));
    }
  }

  private Behavior<Command> onReportLoad(ReportLoad m) {
    try {
      state.reportLoad(m.workerId(), m.ranks());
      return reply(m.replyTo(), new Ack(null));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new Ack(e.error()));
    }
  }

  private Behavior<Command> onSetPolicy(SetPolicy m) {
    try {
      long version = state.setPolicy(m.policy(), m.parameters());
      return reply(m.replyTo(), new PolicyReply(state.view().policy().policy().wireName(), version, null));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new PolicyReply(null, 0, e.error()));
    }
  }

  private Behavior<Command> onBook(Book m) {
    BookOutcome outcome = state.book(m.request(), m.nonce(), m.deadlineMillis());
    if (outcome instanceof BookOutcome.Queued) {
      queued.put(m.nonce(), m.replyTo());
      return afterCommand();
    }
    return reply(m.replyTo(), toReply(outcome));
  }

  private Behavior<Command> onCancelBook(CancelBook m) {
    if (state.cancelBook(m.requestId(), m.nonce())) {
      queued.remove(m.nonce());
    }
    return afterCommand();
  }

  private Behavior<Command> onExpire() {
    int expired = state.expire();
    if (expired > 0) {
      getContext().getLog().info("model '{}': {} booking(s) expired on their lease", state.model(), expired);
    }
    return afterCommand();
  }

  /** Answers queued Books that the last command decided. */
  private void answerCompletions() {
    for (Completion completion : state.drainCompletions()) {
      ActorRef<BookReply> replyTo = queued.remove(completion.nonce());
      if (replyTo != null) {
        replyTo.tell(toReply(completion.outcome()));
      }
    }
  }

  private static BookReply toReply(BookOutcome outcome) {
    if (outcome instanceof BookOutcome.Booked booked) {
      return new BookReply(booked.answer(), null);
    }
    if (outcome instanceof BookOutcome.Rejected rejected) {
      return new BookReply(null, rejected.error());
    }
    throw new IllegalStateException("a queued Book has no reply yet");
  }
}
