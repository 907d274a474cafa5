package io.kvrouter.cluster;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.admission.Completion;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.membership.Registered;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.replication.ReplicaDelta;
import io.kvrouter.core.replication.SnapshotChunk;
import io.kvrouter.core.membership.ViewState;
import io.kvrouter.core.explain.DecisionKind;
import io.kvrouter.core.explain.DecisionLog;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.SelectionRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
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
 * timer ({@code kvrouter.replication.interval}) whose expiry sends one {@link ReplicaDelta} to every peer's
 * {@link ReplicaNode}; each peer acknowledges it, and a peer that is new, reports a gap or has not acknowledged within
 * {@code resend-after} gets a full snapshot in chunks. It starts by recovering the freshest replica of its region
 * ({@link AdmissionRecovery}).
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

  /** A peer applied everything up to {@code seq} of {@code epoch}. */
  public record ReplicaAck(ActorRef<ReplicaNode.Command> peer, long epoch, long seq) implements Command {}

  /** A peer missed a delta (or has not got this epoch's snapshot): it needs a full snapshot. */
  public record SnapshotWanted(ActorRef<ReplicaNode.Command> peer, long epoch) implements Command {}

  /** A peer's answer to a recovering actor: how fresh its copy is ({@code held} false: it has none). */
  public record ReplicaStamp(ActorRef<ReplicaNode.Command> peer, long epoch, long seq, boolean held)
      implements Command {}

  /** One chunk of the copy a recovering actor pulled. */
  public record RecoveryChunk(SnapshotChunk chunk) implements Command {}

  /** Recovery's wait for stamps or chunks ended. */
  enum RecoveryTimeout implements Command {
    INSTANCE
  }

  /** {@code view}: the model's view after the call, for the relaying node to adopt before it answers. */
  public record RegisterReply(Registered registered, ViewState view, RoutingError error) implements CborSerializable {}

  public record DeregisterReply(int droppedBookings, ViewState view, RoutingError error) implements CborSerializable {}

  public record Ack(RoutingError error) implements CborSerializable {}

  /** The outcome of a Release, MarkPrefillDone or Renew (with the booked rank's new load, for the relaying node). */
  public record MutationReply(MutationResult result) implements CborSerializable {}

  public record PolicyReply(String policy, long viewVersion, ViewState view, RoutingError error)
      implements CborSerializable {}

  /** The model's state, the address of the node hosting its actor and the last replication seq it sent. */
  public record StateReply(ModelSnapshot snapshot, String hostNode, long replicationSeq) implements CborSerializable {}

  public record BookReply(BookingAnswer answer, RoutingError error) implements CborSerializable {}

  /** Books decided by the actor on {@code hostNode}, newest first (none when its node records no decisions). */
  public record BookDecisionsReply(List<Explanation> decisions, String hostNode) implements CborSerializable {}

  /**
   * What the node gives each admission actor it hosts. {@code forget} drops whatever the node keeps for a model (view,
   * facade, KV index, local-actor slot) once its actor has passivated.
   */
  public record Environment(AdmissionSettings settings, Clock clock, ViewRegistry registry,
      Duration expiryInterval, Function<String, KvOverlapSource> kvIndex, LocalAdmissions locals,
      Consumer<String> forget, ReplicationConfig replication, ReplicaPeers peers, String hostNode,
      Function<String, DecisionLog> decisions, PoolPublisher pools) {}

  private static final Object FLUSH_TIMER = "flush";
  private static final Object RESEND_TIMER = "resend";
  /** Commands that arrive while the actor recovers wait here; beyond it they are dropped (their asks time out). */
  static final int STASH_CAPACITY = 10_000;

  private final AdmissionState state;
  private final Map<Long, ActorRef<BookReply>> queued = new HashMap<>();
  private final LocalAdmissions locals;
  private final ActorRef<ClusterSharding.ShardCommand> shard;
  private final Environment env;
  private final TimerScheduler<Command> timers;
  /** Replication to each peer's replica actor; a listed peer missing here gets a snapshot at the next flush. */
  private final Map<ActorRef<ReplicaNode.Command>, PeerProgress> peers = new HashMap<>();
  /** The last pool summary's sequence number in this incarnation (0: none published yet). */
  private long poolSequence;

  /** @param shard the entity's shard, which passivates it */
  public static Behavior<Command> create(String model, ActorRef<ClusterSharding.ShardCommand> shard, Environment env) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> Behaviors.withStash(STASH_CAPACITY,
        stash -> AdmissionRecovery.start(ctx, model, env, timers, stash,
            state -> new ModelAdmission(ctx, shard, env, timers, state)))));
  }

  private ModelAdmission(ActorContext<Command> context, ActorRef<ClusterSharding.ShardCommand> shard,
      Environment env, TimerScheduler<Command> timers, AdmissionState state) {
    super(context);
    this.locals = env.locals();
    this.shard = shard;
    this.env = env;
    this.timers = timers;
    this.state = state;
    timers.startTimerWithFixedDelay(ExpireLeases.INSTANCE, env.expiryInterval());
    state.setReplicationEnabled(env.replication().enabled());
    state.recordDecisionsTo(env.decisions().apply(state.model()));
    if (env.replication().enabled()) {
      // every peer is new to this incarnation: the first flush sends each a snapshot of this epoch
      timers.startTimerWithFixedDelay(RESEND_TIMER, Flush.INSTANCE, env.replication().resendAfter());
      scheduleFlush();
    }
    timers.startTimerWithFixedDelay(PublishPool.INSTANCE, env.pools().interval());
    locals.started(state.model(), context.getSelf());
    context.getLog().debug("admission for model '{}' started, epoch {}", state.model(), state.epoch());
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
        .onMessage(Release.class, m -> reply(m.replyTo(),
            new MutationReply(state.release(m.requestId(), m.attempt()))))
        .onMessage(MarkPrefillDone.class, m -> reply(m.replyTo(),
            new MutationReply(state.markPrefillDone(m.requestId(), m.attempt()))))
        .onMessage(Renew.class, m -> reply(m.replyTo(), new MutationReply(state.renew(m.requestId(), m.attempt()))))
        .onMessage(GetState.class, m -> reply(m.replyTo(),
            new StateReply(state.snapshot(), env.hostNode(), state.replicationSeq())))
        .onMessage(GetBookDecisions.class, m -> reply(m.replyTo(), bookDecisions(m.limit())))
        .onMessageEquals(ExpireLeases.INSTANCE, this::onExpire)
        .onMessageEquals(Flush.INSTANCE, () -> {
          flush();
          return this;
        })
        .onMessageEquals(PublishPool.INSTANCE, () -> {
          if (!state.view().isEmpty()) {
            publishPool();
          }
          return this;
        })
        .onMessage(ReplicaAck.class, this::onReplicaAck)
        .onMessage(SnapshotWanted.class, this::onSnapshotWanted)
        .onMessageEquals(Wake.INSTANCE, () -> this)
        .onMessage(ReplicaStamp.class, m -> this)
        .onMessage(RecoveryChunk.class, m -> this)
        .onMessageEquals(RecoveryTimeout.INSTANCE, () -> this)
        .onMessageEquals(Stop.INSTANCE, () -> {
          flush();
          return Behaviors.stopped();
        })
        .onSignal(PostStop.class, signal -> {
          locals.stopped(state.model(), getContext().getSelf());
          return this;
        })
        .build();
  }

  private BookDecisionsReply bookDecisions(int limit) {
    DecisionLog log = env.decisions().apply(state.model());
    List<Explanation> books = log == null ? List.of() : log.newest(0).stream()
        .filter(d -> d.kind() == DecisionKind.BOOK)
        .limit(limit <= 0 ? Long.MAX_VALUE : limit)
        .map(d -> d.explain(env.hostNode()))
        .toList();
    return new BookDecisionsReply(books, env.hostNode());
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
    scheduleFlush();
    if (!state.isDisposable()) {
      return this;
    }
    // the peers learn that the model is empty, and forget it; so do the other regions
    flush();
    publishPool();
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
        .onMessageEquals(Flush.INSTANCE, Behaviors::same)
        .onMessageEquals(PublishPool.INSTANCE, Behaviors::same)
        .onMessage(ReplicaAck.class, m -> Behaviors.same())
        .onMessage(SnapshotWanted.class, m -> Behaviors.same())
        .onMessage(Command.class, command -> {
          region.tell(command);
          return Behaviors.same();
        })
        .onSignal(PostStop.class, signal -> {
          locals.stopped(state.model(), getContext().getSelf());
          env.forget().accept(state.model());
          // whatever copy this node kept from an earlier owner is older than what this incarnation held
          env.peers().self().tell(new ReplicaNode.Forget(state.model()));
          return Behaviors.same();
        })
        .build();
  }

  private Behavior<Command> onRegister(Register m) {
    try {
      Registered registered = state.register(m.config());
      return reply(m.replyTo(), new RegisterReply(registered, state.viewState(), null));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new RegisterReply(null, null, e.error()));
    }
  }

  private Behavior<Command> onDeregister(Deregister m) {
    try {
      int dropped = state.deregister(m.workerId());
      return reply(m.replyTo(), new DeregisterReply(dropped, state.viewState(), null));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new DeregisterReply(0, null, e.error()));
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
      return reply(m.replyTo(), new PolicyReply(state.view().policy().policy().wireName(), version,
          state.viewState(), null));
    } catch (RoutingException e) {
      return reply(m.replyTo(), new PolicyReply(null, 0, null, e.error()));
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

  private void publishPool() {
    env.pools().publish(state, ++poolSequence);
  }

  // ---- replication

  /** What this incarnation sent one peer and what the peer acknowledged (seqs of this epoch). */
  private static final class PeerProgress {
    long sentSeq;
    long ackedSeq;
    /** When the oldest delta not yet acknowledged was sent; 0 when all are. */
    long waitingSinceMillis;
    long snapshotSentAtMillis;
    /** Snapshots sent since the peer last answered; each doubles the wait before the next. */
    int unansweredSnapshots;
    boolean wantsSnapshot;
    long probeSentAtMillis;
    /** Probes sent since the peer last answered; each doubles the wait before the next. */
    int unansweredProbes;

    boolean maySnapshot(long nowMillis, long resendAfterMillis) {
      return nowMillis - snapshotSentAtMillis >= resendAfterMillis << Math.min(unansweredSnapshots, 5);
    }

    /** Silent for {@code resend-after} with a delta unacknowledged, and not probed within its backoff. */
    boolean wantsProbe(long nowMillis, long resendAfterMillis) {
      return sentSeq > ackedSeq && nowMillis - waitingSinceMillis >= resendAfterMillis
          && nowMillis - probeSentAtMillis >= resendAfterMillis << Math.min(unansweredProbes, 5);
    }

    void sent(long seq, long nowMillis) {
      if (sentSeq <= ackedSeq) {
        waitingSinceMillis = nowMillis;
      }
      sentSeq = Math.max(sentSeq, seq);
    }
  }

  private void scheduleFlush() {
    if (env.replication().enabled() && !timers.isTimerActive(FLUSH_TIMER)) {
      timers.startSingleTimer(FLUSH_TIMER, Flush.INSTANCE, env.replication().interval());
    }
  }

  /**
   * Sends what changed since the last flush to every listed peer that is in step, and a full snapshot (as of this
   * delta) to a peer that is new or asked for one (at most one snapshot per peer per {@code resend-after}, twice that
   * after a snapshot the peer did not answer, and so on up to 32 times: a peer that died is not sent a full copy every
   * few hundred ms until it is removed).
   *
   * <p>A peer that has left a delta unacknowledged for {@code resend-after} is not sent a snapshot on that ground
   * alone: it is most often merely slow (a burst of Books fills its inbound stream), and a copy of the whole ledger
   * made it slower still (relayed Books, whose answers queue behind it on the same connection, stalled for seconds).
   * Later deltas reach it anyway, and when nothing changed, an empty delta as the next seq ({@link
   * AdmissionState#replicaProbe}, backed off like snapshots): a peer that missed a delta then sees the gap and asks.
   */
  private void flush() {
    if (!env.replication().enabled()) {
      return;
    }
    long now = env.clock().millis();
    List<ReplicaDelta> deltas = state.drainReplicaDeltas(now, env.replication().maxChunkBytes());
    Set<ActorRef<ReplicaNode.Command>> listed = env.peers().others();
    peers.keySet().retainAll(listed);
    long resendAfter = env.replication().resendAfter().toMillis();
    if (deltas.isEmpty() && peers.values().stream().anyMatch(p -> p.wantsProbe(now, resendAfter))) {
      deltas = List.of(state.replicaProbe(now));
      for (PeerProgress progress : peers.values()) {
        if (progress.wantsProbe(now, resendAfter)) {
          progress.probeSentAtMillis = now;
          progress.unansweredProbes++;
        }
      }
    }
    List<ActorRef<ReplicaNode.Command>> behind = new ArrayList<>();
    for (ActorRef<ReplicaNode.Command> peer : listed) {
      PeerProgress progress = peers.get(peer);
      if (progress == null || (progress.wantsSnapshot && progress.maySnapshot(now, resendAfter))) {
        behind.add(peer);
      } else if (!deltas.isEmpty()) {
        for (ReplicaDelta delta : deltas) {
          peer.tell(new ReplicaNode.Delta(delta, getContext().getSelf()));
        }
        progress.sent(state.replicationSeq(), now);
      }
    }
    if (behind.isEmpty()) {
      return;
    }
    List<SnapshotChunk> chunks = state.replicaSnapshot(now, env.replication().maxChunkBytes());
    for (ActorRef<ReplicaNode.Command> peer : behind) {
      chunks.forEach(chunk -> peer.tell(new ReplicaNode.Chunk(chunk, getContext().getSelf())));
      PeerProgress progress = peers.computeIfAbsent(peer, p -> new PeerProgress());
      progress.wantsSnapshot = false;
      progress.snapshotSentAtMillis = now;
      progress.unansweredSnapshots++;
      progress.sent(state.replicationSeq(), now);
    }
  }

  private Behavior<Command> onReplicaAck(ReplicaAck m) {
    PeerProgress progress = peers.get(m.peer());
    if (progress != null && m.epoch() == state.epoch() && m.seq() > progress.ackedSeq) {
      progress.ackedSeq = m.seq();
      progress.unansweredSnapshots = 0;
      progress.unansweredProbes = 0;
      // the peer made progress: its next wait starts now
      progress.waitingSinceMillis = progress.ackedSeq >= progress.sentSeq ? 0 : env.clock().millis();
    }
    return this;
  }

  private Behavior<Command> onSnapshotWanted(SnapshotWanted m) {
    PeerProgress progress = peers.get(m.peer());
    if (progress != null && m.epoch() == state.epoch()) {
      progress.wantsSnapshot = true;
      progress.unansweredSnapshots = 0;
      scheduleFlush();
    }
    return this;
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
