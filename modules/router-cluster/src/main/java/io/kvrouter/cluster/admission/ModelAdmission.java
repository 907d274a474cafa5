package io.kvrouter.cluster.admission;

import io.kvrouter.cluster.models.ModelSlot;
import io.kvrouter.cluster.models.ModelSlots;
import io.kvrouter.cluster.regions.PoolPublisher;
import io.kvrouter.cluster.replication.ReplicaActor;
import io.kvrouter.cluster.replication.ReplicaListing;
import io.kvrouter.cluster.replication.ReplicationConfig;
import io.kvrouter.cluster.serialization.CborSerializable;
import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.Completion;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.DecisionLog;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.membership.Registered;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.replication.HeldReplies;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.ReplicationSender;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.selection.SelectionRequest;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import io.kvrouter.core.replication.QueuedBook;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * The admission actor of one model (a Cluster Sharding entity, id = model name). A thin shell around
 * {@link AdmissionState}: every command is one call on it, the reply goes out after the state (and with it the load
 * cells and the published view) has changed. Sharding never passivates it for idleness (a model with workers may
 * receive only Selects, which never reach it); it passivates itself once its model holds nothing.
 *
 * <p>It replicates its state to the other nodes of its region: a command that changed something starts a single
 * timer ({@code kvrouter.replication.interval}) whose expiry runs its {@link ReplicationSender}, which sends each
 * peer's {@link ReplicaActor} what it needs. It starts by recovering the freshest replica of its region
 * ({@link AdmissionRecovery}).
 *
 * <p>A Book that waits in the queue is answered when the state decides it (its reply-to kept by nonce). Its reply
 * address also travels with the state's copies, so when this incarnation ends with Books still queued (its node
 * died), the next one answers each UNAVAILABLE {@code RECOVERING} (retryable) instead of leaving it to time out; one
 * that stops on purpose (rebalance, shutdown) answers them so itself.
 */
public final class ModelAdmission extends AbstractBehavior<ModelAdmission.Command> {

  public static final EntityTypeKey<Command> ENTITY_KEY = EntityTypeKey.create(Command.class, "ModelAdmission");

  public sealed interface Command extends CborSerializable {}

  public record Register(WorkerConfig config, ActorRef<RegisterReply> replyTo) implements Command {}

  public record Deregister(String workerId, ActorRef<DeregisterReply> replyTo) implements Command {}

  public record ReportLoad(String workerId, List<RankReport> ranks, ActorRef<LoadReply> replyTo) implements Command {}

  public record SetPolicy(String policy, Map<String, String> parameters, ActorRef<PolicyReply> replyTo)
      implements Command {}

  /**
   * {@code timeoutMillis}: how long the caller waits for the answer (0: no bound). The actor bounds a queue wait by
   * it on its own clock, from when it takes the Book: deadlines travel as durations, never as another node's clock
   * reading. {@code nonce} identifies this call for CancelBook.
   */
  public record Book(SelectionRequest request, long nonce, long timeoutMillis, ActorRef<BookReply> replyTo)
      implements Command {}

  public record CancelBook(String requestId, long nonce) implements Command {}

  /**
   * Books relayed by another node ({@link BookRelay}): each decided as a {@link Book} would be, its answer sent to
   * {@code endpoint} as a {@link BookRelay.Answer} with its nonce, with the other answers to that node decided in the
   * same message ({@link RelayAnswers}). Several Books when the relaying node coalesced them.
   * {@code wantsAdmission}: the answers carry this actor's reference, for the relay to send straight to it.
   */
  public record RelayBooks(ActorRef<BookRelay.Answers> endpoint, List<RelayedBook> books, boolean wantsAdmission)
      implements Command {}

  /** One Book of a {@link RelayBooks}; its fields as a {@link Book}'s. */
  public record RelayedBook(SelectionRequest request, long nonce, long timeoutMillis) {}

  /**
   * Mutations of bookings relayed by another node ({@link BookRelay}): each applied as its {@link Release},
   * {@link MarkPrefillDone} or {@link Renew} would be, its result sent to {@code endpoint} as a {@link BookRelay.Answer}
   * with its correlation id once a majority holds the change, with the other answers to that node decided in the
   * same message. {@code wantsAdmission} as for {@link RelayBooks}.
   */
  public record RelayMutations(ActorRef<BookRelay.Answers> endpoint, List<RelayedMutation> mutations,
      boolean wantsAdmission) implements Command {}

  /** One mutation of a {@link RelayMutations}: what it does, to which booking, and its correlation id. */
  public record RelayedMutation(MutationKind kind, String requestId, long attempt, long nonce) {}

  /** The mutations of a live booking a caller sends after its Book. */
  public enum MutationKind {
    RELEASE("Release"), MARK_PREFILL_DONE("MarkPrefillDone"), RENEW("Renew");

    private final String callName;

    MutationKind(String callName) {
      this.callName = callName;
    }

    /** The call's name as the API spells it (messages, logs). */
    public String callName() {
      return callName;
    }

    MutationResult applyTo(AdmissionState state, String requestId, long attempt) {
      return switch (this) {
        case RELEASE -> state.release(requestId, attempt);
        case MARK_PREFILL_DONE -> state.markPrefillDone(requestId, attempt);
        case RENEW -> state.renew(requestId, attempt);
      };
    }
  }

  public record Release(String requestId, long attempt, ActorRef<MutationReply> replyTo) implements Command {}

  public record MarkPrefillDone(String requestId, long attempt, ActorRef<MutationReply> replyTo)
      implements Command {}

  public record Renew(String requestId, long attempt, ActorRef<MutationReply> replyTo) implements Command {}

  public record GetState(ActorRef<StateReply> replyTo) implements Command {}

  /** The newest Books this actor decided, at most {@code limit} (0: all its node keeps). */
  public record GetBookDecisions(int limit, ActorRef<BookDecisionsReply> replyTo) implements Command {}

  /** Sent by the actor's timer: expires leases and queued Books past their deadline. */
  public enum ExpireLeases implements Command {
    INSTANCE
  }

  /** Sharding's stop message (passivation, rebalance): sent after the commands already on their way to the actor. */
  public enum Stop implements Command {
    INSTANCE
  }

  /** Does nothing: sent through the region when a member left, so sharding restarts the actor without traffic. */
  public enum Wake implements Command {
    INSTANCE
  }

  /** Sent by the actor's summary timer: publishes its pool's summary to every region ({@link PoolPublisher}). */
  public enum PublishPool implements Command {
    INSTANCE
  }

  /** Sent by the actor's replication timer: sends what changed to the region's other nodes. */
  enum Flush implements Command {
    INSTANCE
  }

  /** A replica actor's answer (an ack, a gap, a recovery stamp or chunk), through this actor's message adapter. */
  record FromReplica(ReplicaActor.Reply reply) implements Command {}

  /** Recovery's wait for stamps or chunks ended. */
  enum RecoveryTimeout implements Command {
    INSTANCE
  }

  // ---- replies: one sealed type per command that can be refused; Refused is the refusal of each

  /** A command the actor refused, with why. */
  public record Refused(RoutingError error)
      implements RegisterReply, DeregisterReply, LoadReply, PolicyReply, BookReply {}

  public sealed interface RegisterReply extends CborSerializable {}

  /** {@code view}: the model's view after the call, for the relaying node to adopt before it answers. */
  public record WorkerRegistered(Registered registered, ViewState view) implements RegisterReply {}

  public sealed interface DeregisterReply extends CborSerializable {}

  public record WorkerDeregistered(int droppedBookings, ViewState view) implements DeregisterReply {}

  public sealed interface LoadReply extends CborSerializable {}

  public enum LoadApplied implements LoadReply {
    INSTANCE
  }

  public sealed interface PolicyReply extends CborSerializable {}

  public record PolicyChanged(String policy, long viewVersion, ViewState view) implements PolicyReply {}

  public sealed interface BookReply extends CborSerializable {}

  public record Booked(BookingAnswer answer) implements BookReply {}

  /** The outcome of a Release, MarkPrefillDone or Renew (with the booked rank's new load, for the relaying node). */
  public record MutationReply(MutationResult result) implements CborSerializable {}

  /** The model's state, the address of the node hosting its actor and the last replication seq it sent. */
  public record StateReply(ModelSnapshot snapshot, String hostNode, long replicationSeq) implements CborSerializable {}

  /** Books decided by the actor on {@code hostNode}, newest first (none when its node records no decisions). */
  public record BookDecisionsReply(List<Explanation> decisions, String hostNode) implements CborSerializable {}

  /** What the node gives each admission actor it hosts; {@code regionMembers}: the members of its region now. */
  public record Environment(AdmissionSettings settings, Clock clock, ModelSlots<Command> slots,
      Duration expiryInterval, ReplicationConfig replication, ReplicaListing replicas, String hostNode,
      PoolPublisher pools, java.util.function.IntSupplier regionMembers) {}

  private static final Object FLUSH_TIMER = "flush";
  private static final Object RESEND_TIMER = "resend";
  /** Commands that arrive while the actor recovers wait here; beyond it they are dropped (their asks time out). */
  static final int STASH_CAPACITY = 10_000;
  /**
   * A queued relayed Book's reply address, as its copies carry it: the relaying node's endpoint, which needs the
   * nonce with the answer (a plain Book's address is its caller's own reply-to).
   */
  private static final String RELAYED = "relayed:";

  private final AdmissionState state;
  private final ModelSlot<Command> slot;
  /** Where each queued Book's answer goes, by nonce. */
  private final Map<Long, java.util.function.Consumer<BookReply>> queued = new HashMap<>();
  private final ActorRefResolver resolver;
  private final ActorRef<ClusterSharding.ShardCommand> shard;
  private final Environment env;
  private final TimerScheduler<Command> timers;
  private final ReplicationSender<ActorRef<ReplicaActor.Command>> sender;
  private final ReplicationSender.Transport<ActorRef<ReplicaActor.Command>> transport;
  /** Answers waiting until a majority of the region holds what they acknowledge. */
  private final HeldReplies held = new HeldReplies();
  private final RelayAnswers relayAnswers;
  /** A Flush is on its way in the mailbox (sent to carry held answers' changes at once). */
  private boolean flushRequested;
  /** The last pool summary's sequence number in this incarnation (0: none published yet). */
  private long poolSequence;

  /** @param shard the entity's shard, which passivates it */
  public static Behavior<Command> create(String model, ActorRef<ClusterSharding.ShardCommand> shard, Environment env) {
    return Behaviors.setup(ctx -> {
      RelayAnswers relayAnswers = new RelayAnswers(ctx.getSelf());
      return RelayAnswers.sentAfterEachMessage(relayAnswers, Command.class, Behaviors.withTimers(timers ->
          Behaviors.withStash(STASH_CAPACITY, stash -> {
            ModelSlot<Command> slot = env.slots().open(model);
            ActorRef<ReplicaActor.Reply> replies = ctx.messageAdapter(ReplicaActor.Reply.class, FromReplica::new);
            return AdmissionRecovery.start(ctx, model, slot, replies, env, timers, stash,
                state -> new ModelAdmission(ctx, slot, shard, env, timers, replies, relayAnswers, state));
          })));
    });
  }

  private ModelAdmission(ActorContext<Command> context, ModelSlot<Command> slot,
      ActorRef<ClusterSharding.ShardCommand> shard, Environment env, TimerScheduler<Command> timers,
      ActorRef<ReplicaActor.Reply> replies, RelayAnswers relayAnswers, AdmissionState state) {
    super(context);
    this.relayAnswers = relayAnswers;
    this.slot = slot;
    this.shard = shard;
    this.env = env;
    this.timers = timers;
    this.state = state;
    this.resolver = ActorRefResolver.get(context.getSystem());
    this.sender = new ReplicationSender<>(env.replication().resendAfter().toMillis(),
        env.replication().maxChunkBytes());
    this.transport = new ReplicationSender.Transport<>() {
      @Override
      public void delta(ActorRef<ReplicaActor.Command> peer, ReplicaDelta delta) {
        peer.tell(new ReplicaActor.Delta(delta, replies));
      }

      @Override
      public void chunk(ActorRef<ReplicaActor.Command> peer, SnapshotChunk chunk) {
        peer.tell(new ReplicaActor.Chunk(chunk, replies));
      }
    };
    timers.startTimerWithFixedDelay(ExpireLeases.INSTANCE, env.expiryInterval());
    state.recordDecisionsTo(slot.decisions());
    if (env.replication().enabled()) {
      // every peer is new to this incarnation: the first flush sends each a snapshot of this epoch
      timers.startTimerWithFixedDelay(RESEND_TIMER, Flush.INSTANCE, env.replication().resendAfter());
      scheduleFlush();
    }
    timers.startTimerWithFixedDelay(PublishPool.INSTANCE, env.pools().interval());
    slot.admissionStarted(context.getSelf());
    context.getLog().debug("admission for model '{}' started, epoch {}", state.model(), state.epoch());
    answerRecoveredQueue();
  }

  /** The Books an earlier incarnation left queued: each answered UNAVAILABLE RECOVERING, where it still waits. */
  private void answerRecoveredQueue() {
    List<QueuedBook> orphans = state.takeRecoveredQueue();
    if (orphans.isEmpty()) {
      return;
    }
    Refused answer = new Refused(state.recoveredQueueError());
    int answered = 0;
    for (QueuedBook book : orphans) {
      if (book.replyTo().isEmpty()) {
        continue;
      }
      try {
        if (book.replyTo().startsWith(RELAYED)) {
          relayAnswers.add(resolver.resolveActorRef(book.replyTo().substring(RELAYED.length())),
              BookRelay.Answer.of(book.nonce(), answer), false);
        } else {
          resolver.<BookReply>resolveActorRef(book.replyTo()).tell(answer);
        }
        answered++;
      } catch (RuntimeException unresolvable) {
        // an address of a node that no longer exists resolves to nothing that could wait for the answer
      }
    }
    getContext().getLog().info("model '{}': answered {} of {} Book(s) left queued by the previous incarnation",
        state.model(), answered, orphans.size());
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder()
        .onMessage(Register.class, this::onRegister)
        .onMessage(Deregister.class, this::onDeregister)
        .onMessage(ReportLoad.class, this::onReportLoad)
        .onMessage(SetPolicy.class, this::onSetPolicy)
        .onMessage(Book.class, this::onBook)
        .onMessage(RelayBooks.class, this::onRelayBooks)
        .onMessage(CancelBook.class, this::onCancelBook)
        .onMessage(RelayMutations.class, this::onRelayMutations)
        .onMessage(Release.class, m -> replyReplicated(m.replyTo(),
            new MutationReply(MutationKind.RELEASE.applyTo(state, m.requestId(), m.attempt()))))
        .onMessage(MarkPrefillDone.class, m -> replyReplicated(m.replyTo(),
            new MutationReply(MutationKind.MARK_PREFILL_DONE.applyTo(state, m.requestId(), m.attempt()))))
        .onMessage(Renew.class, m -> replyReplicated(m.replyTo(),
            new MutationReply(MutationKind.RENEW.applyTo(state, m.requestId(), m.attempt()))))
        .onMessage(GetState.class, m -> reply(m.replyTo(),
            new StateReply(state.snapshot(), env.hostNode(), state.replicationSeq())))
        .onMessage(GetBookDecisions.class, m -> reply(m.replyTo(), bookDecisions(m.limit())))
        .onMessageEquals(ExpireLeases.INSTANCE, this::onExpire)
        .onMessageEquals(Flush.INSTANCE, () -> {
          flushRequested = false;
          flush();
          return this;
        })
        .onMessageEquals(PublishPool.INSTANCE, () -> {
          if (!state.view().isEmpty()) {
            publishPool();
          }
          return this;
        })
        .onMessage(FromReplica.class, this::onReplica)
        .onMessageEquals(Wake.INSTANCE, () -> this)
        .onMessageEquals(RecoveryTimeout.INSTANCE, () -> this)
        .onMessageEquals(Stop.INSTANCE, () -> {
          // handing over (rebalance, shutdown): the callers of queued Books retry on the next incarnation
          state.rejectQueued();
          answerCompletions();
          flush();
          dropHeld();
          return Behaviors.stopped();
        })
        .onSignal(PostStop.class, signal -> {
          slot.admissionStopped(getContext().getSelf());
          return this;
        })
        .build();
  }

  private BookDecisionsReply bookDecisions(int limit) {
    DecisionLog log = slot.decisions();
    List<Explanation> books = log == null ? List.of() : log.newest(0).stream()
        .filter(d -> d.kind() == DecisionKind.BOOK || d.kind() == DecisionKind.BOOK_DECODE)
        .limit(limit <= 0 ? Long.MAX_VALUE : limit)
        .map(d -> d.explain(env.hostNode()))
        .toList();
    return new BookDecisionsReply(books, env.hostNode());
  }

  private <T> Behavior<Command> reply(ActorRef<T> replyTo, T value) {
    replyTo.tell(value);
    return afterCommand();
  }

  /** As {@link #reply}, the answer sent once a majority of the region holds what it acknowledges. */
  private <T> Behavior<Command> replyReplicated(ActorRef<T> replyTo, T value) {
    answerReplicated(() -> replyTo.tell(value));
    return afterCommand();
  }

  /**
   * Sends {@code value} at once when no peer need hold the change first (a region of one node, or replication off),
   * else holds it for {@link #releaseHeld} and makes sure a flush carries the change soon: at once when no earlier
   * delta awaits its acknowledgements, else when they come (so under load one flush carries many answers' changes).
   */
  private void answerReplicated(Runnable send) {
    if (peersToWaitFor() == 0) {
      send.run();
      return;
    }
    held.hold(send);
    requestFlushIfIdle();
  }

  private void requestFlushIfIdle() {
    if (!held.awaitingAcks() && held.hasUnsealed() && !flushRequested) {
      flushRequested = true;
      getContext().getSelf().tell(Flush.INSTANCE);
    }
  }

  /** Sends the held answers whose changes enough peers acknowledged; then flushes what newer ones wait for. */
  private void releaseHeld() {
    held.release(sender.ackedByAtLeast(peersToWaitFor()));
    requestFlushIfIdle();
  }

  private void dropHeld() {
    int dropped = held.dropAll();
    if (dropped > 0) {
      getContext().getLog().info("model '{}': stopped with {} answer(s) not yet held by a majority; their callers "
          + "retry", state.model(), dropped);
    }
  }

  /** Peers that must hold a change before it is answered: half the region's members, rounded down. */
  private int peersToWaitFor() {
    return env.replication().peersToWaitFor(env.regionMembers().getAsInt());
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
    scheduleFlush();
    return passivateIfDisposable();
  }

  /**
   * Passivates the actor once its model holds nothing and every answer went out (the Deregister or Release that
   * emptied it may still wait for the majority: it is answered first).
   */
  private Behavior<Command> passivateIfDisposable() {
    if (!state.isDisposable() || held.size() > 0) {
      return this;
    }
    // the peers learn that the model is empty, and forget it; so do the other regions
    flush();
    publishPool();
    ActorRef<Command> self = getContext().getSelf();
    // facades fall back to the region, which buffers commands while the shard passivates the actor
    slot.admissionStopped(self);
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
        .onMessageEquals(Flush.INSTANCE, Behaviors::same)
        .onMessageEquals(PublishPool.INSTANCE, Behaviors::same)
        .onMessage(FromReplica.class, m -> Behaviors.same())
        .onMessage(Command.class, command -> {
          region.tell(command);
          return Behaviors.same();
        })
        .onSignal(PostStop.class, signal -> {
          slot.admissionStopped(getContext().getSelf());
          // the node forgets the model, with whatever copy it kept from an earlier owner
          env.slots().close(state.model(), slot);
          return Behaviors.same();
        })
        .build();
  }

  private Behavior<Command> onRegister(Register m) {
    try {
      Registered registered = state.register(m.config());
      return replyReplicated(m.replyTo(), new WorkerRegistered(registered, state.viewState()));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new Refused(e.error()));
    }
  }

  private Behavior<Command> onDeregister(Deregister m) {
    try {
      int dropped = state.deregister(m.workerId());
      return replyReplicated(m.replyTo(), new WorkerDeregistered(dropped, state.viewState()));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new Refused(e.error()));
    }
  }

  private Behavior<Command> onReportLoad(ReportLoad m) {
    try {
      state.reportLoad(m.workerId(), m.ranks());
      return reply(m.replyTo(), LoadApplied.INSTANCE);
    } catch (RoutingException e) {
      return reply(m.replyTo(), new Refused(e.error()));
    }
  }

  private Behavior<Command> onSetPolicy(SetPolicy m) {
    try {
      long version = state.setPolicy(m.policy(), m.parameters());
      return replyReplicated(m.replyTo(), new PolicyChanged(state.view().policy().policy().wireName(), version,
          state.viewState()));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new Refused(e.error()));
    }
  }

  private Behavior<Command> onBook(Book m) {
    // the reply address travels with a queued Book's copies; without queueing no Book waits, so none is made
    String caller = state.queueingEnabled() ? resolver.toSerializationFormat(m.replyTo()) : "";
    book(m.request(), m.nonce(), m.timeoutMillis(), caller, m.replyTo()::tell);
    return afterCommand();
  }

  private Behavior<Command> onRelayBooks(RelayBooks m) {
    String caller = state.queueingEnabled() ? RELAYED + resolver.toSerializationFormat(m.endpoint()) : "";
    for (RelayedBook b : m.books()) {
      long nonce = b.nonce();
      book(b.request(), nonce, b.timeoutMillis(), caller,
          reply -> relayAnswers.add(m.endpoint(), BookRelay.Answer.of(nonce, reply), m.wantsAdmission()));
    }
    return afterCommand();
  }

  private Behavior<Command> onRelayMutations(RelayMutations m) {
    for (RelayedMutation mutation : m.mutations()) {
      MutationResult result = mutation.kind().applyTo(state, mutation.requestId(), mutation.attempt());
      BookRelay.Answer answer = BookRelay.Answer.mutated(mutation.nonce(), result);
      answerReplicated(() -> relayAnswers.add(m.endpoint(), answer, m.wantsAdmission()));
    }
    return afterCommand();
  }

  /**
   * Decides a Book: a booking is answered once a majority holds it, a refusal (which changed nothing) at once, a
   * queued Book when the state decides it.
   */
  private void book(SelectionRequest request, long nonce, long timeoutMillis, String caller,
      java.util.function.Consumer<BookReply> replyTo) {
    long deadline = timeoutMillis > 0 ? env.clock().millis() + timeoutMillis : 0;
    BookOutcome outcome = state.book(request, nonce, deadline, caller);
    if (outcome instanceof BookOutcome.Queued) {
      queued.put(nonce, replyTo);
    } else if (outcome instanceof BookOutcome.Booked) {
      BookReply reply = toReply(outcome);
      answerReplicated(() -> replyTo.accept(reply));
    } else {
      replyTo.accept(toReply(outcome));
    }
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

  private void publishPool() {
    env.pools().publish(state, ++poolSequence);
  }

  // ---- replication

  private Behavior<Command> onReplica(FromReplica m) {
    long now = env.clock().millis();
    if (m.reply() instanceof ReplicaActor.Acked acked) {
      sender.acked(acked.peer(), acked.epoch(), acked.seq(), state.epoch(), now);
      releaseHeld();
      return passivateIfDisposable();
    } else if (m.reply() instanceof ReplicaActor.SnapshotWanted wanted
        && sender.snapshotWanted(wanted.peer(), wanted.epoch(), state.epoch())) {
      scheduleFlush();
    }
    // a recovery stamp or chunk arriving late is ignored
    return this;
  }

  private void scheduleFlush() {
    if (env.replication().enabled() && !timers.isTimerActive(FLUSH_TIMER)) {
      timers.startSingleTimer(FLUSH_TIMER, Flush.INSTANCE, env.replication().interval());
    }
  }

  private void flush() {
    if (env.replication().enabled()) {
      sender.flush(state, env.replicas().others(), env.clock().millis(), transport);
      held.seal(state.replicationSeq());
      // the region shrank, or the peers acknowledged the seq before: nothing more to wait for
      releaseHeld();
    }
  }

  /** Answers queued Books that the last command decided. */
  private void answerCompletions() {
    for (Completion completion : state.drainCompletions()) {
      java.util.function.Consumer<BookReply> replyTo = queued.remove(completion.nonce());
      if (replyTo != null) {
        BookReply reply = toReply(completion.outcome());
        if (completion.outcome() instanceof BookOutcome.Booked) {
          answerReplicated(() -> replyTo.accept(reply));
        } else {
          replyTo.accept(reply);
        }
      }
    }
  }

  private static BookReply toReply(BookOutcome outcome) {
    if (outcome instanceof BookOutcome.Booked booked) {
      return new Booked(booked.answer());
    }
    if (outcome instanceof BookOutcome.Rejected rejected) {
      return new Refused(rejected.error());
    }
    throw new IllegalStateException("a queued Book has no reply yet");
  }
}
