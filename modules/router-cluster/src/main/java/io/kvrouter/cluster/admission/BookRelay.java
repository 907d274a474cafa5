package io.kvrouter.cluster.admission;

import com.typesafe.config.Config;
import io.kvrouter.cluster.serialization.CborSerializable;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.MutationResult;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.selection.SelectionRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import scala.concurrent.ExecutionContextExecutor;

/**
 * How this node sends Books, and the Release, MarkPrefillDone and Renew calls that follow them, to a model's admission
 * actor on another node without an ask per call: one long-lived
 * reply endpoint per node (an actor whose reference Artery resolves and compresses once, unlike an ask's temporary
 * actor) receives every relayed answer as an {@link Answer} carrying the Book's nonce, which finds its caller in the
 * pending table; the admission actor sends the answers it decided while handling one message together
 * ({@link Answers}). A Book's timeout is one scheduler task (the ask timeout of the caller's deadline, as for an ask);
 * when it fires first the call fails with a {@link TimeoutException}, and {@link BookCall} undoes the Book with its
 * CancelBook as it does for an ask.
 *
 * <p>Coalescing: while more than {@code coalesce-above} relayed Books of one model are unanswered, further Books of
 * it are gathered and sent by the endpoint as one {@link ModelAdmission.RelayBooks} (at most {@code max-batch}),
 * everything that arrived while the endpoint was busy with the previous one; each is still answered on its own.
 *
 * <p>Direct ({@code direct = on}): the first answer carries the admission actor's reference, and later Books go
 * straight to it, without the sharding envelope and the hops through both shard regions. The endpoint watches it;
 * when it stops (hand-off, rebalance, passivation, its node's death) Books go through the shard region again (which
 * buffers them while the shard moves), and those sent straight to it and still unanswered are sent again through the
 * region: the old actor answered everything it took before it stopped (Artery delivers its answers before the
 * termination), so what is left never reached it, or booked without its answer going out (a second Book of the same
 * request id is a replay of that booking).
 */
public final class BookRelay {
  /** How a Book reaches the model's actor on another node. */
  public enum Mode {
    /** An {@code EntityRef.ask} per Book (a temporary actor each). */
    ASK,
    /** Through this node's reply endpoint, correlated by nonce. */
    REPLY_ENDPOINT;

    static Mode of(String name) {
      return switch (name) {
        case "ask" -> ASK;
        case "reply-endpoint" -> REPLY_ENDPOINT;
        default -> throw new IllegalArgumentException(
            "kvrouter.admission.relay.mode must be reply-endpoint or ask, got '" + name + "'");
      };
    }
  }

  /** The {@code kvrouter.admission.relay} block; {@code coalesceAbove} 0: every Book goes alone. */
  public record Settings(Mode mode, int coalesceAbove, int maxBatch, boolean direct) {
    public Settings {
      if (coalesceAbove < 0 || maxBatch < 1) {
        throw new IllegalArgumentException("kvrouter.admission.relay: coalesce-above must be at least 0 and "
            + "max-batch at least 1, got " + coalesceAbove + " and " + maxBatch);
      }
    }

    public static Settings fromConfig(Config config) {
      Config c = config.getConfig("kvrouter.admission.relay");
      return new Settings(Mode.of(c.getString("mode")), c.getInt("coalesce-above"), c.getInt("max-batch"),
          c.getBoolean("direct"));
    }
  }

  /** What the endpoint receives. */
  sealed interface EndpointMessage {}

  /**
   * A relayed call's answer with its nonce: a Book's booking or the error it was refused with, or a mutation's result
   * (exactly one of the three is set).
   */
  public record Answer(long nonce, BookingAnswer booked, RoutingError refused, MutationResult mutated)
      implements CborSerializable {
    static Answer of(long nonce, ModelAdmission.BookReply reply) {
      return reply instanceof ModelAdmission.Booked booked
          ? new Answer(nonce, booked.answer(), null, null)
          : new Answer(nonce, null, ((ModelAdmission.Refused) reply).error(), null);
    }

    static Answer mutated(long nonce, MutationResult result) {
      return new Answer(nonce, null, null, result);
    }

    ModelAdmission.BookReply reply() {
      return booked != null ? new ModelAdmission.Booked(booked) : new ModelAdmission.Refused(refused);
    }
  }

  /**
   * The relayed answers the admission actor decided while handling one message, sent to the relaying node's
   * endpoint as one message (one envelope and one delivery for a batch of Books); {@code admission}: the actor,
   * when a Book asked for it.
   */
  public record Answers(List<Answer> answers, ActorRef<ModelAdmission.Command> admission)
      implements EndpointMessage, CborSerializable {}

  /** Watch this admission actor, which {@code channel} now sends to. */
  private record Watch(Channel channel, ActorRef<ModelAdmission.Command> admission)
      implements EndpointMessage, NoSerializationVerificationNeeded {}

  private record AdmissionStopped(Channel channel, ActorRef<ModelAdmission.Command> admission)
      implements EndpointMessage, NoSerializationVerificationNeeded {}

  /** Send what {@code channel} gathered. */
  private record Drain(Channel channel) implements EndpointMessage, NoSerializationVerificationNeeded {}

  private final Settings settings;
  private final ActorRef<EndpointMessage> endpointActor;
  private final ActorRef<Answers> endpoint;
  private final org.apache.pekko.actor.Scheduler scheduler;
  private final ExecutionContextExecutor timeouts;
  private final Cluster cluster;
  private final ConcurrentHashMap<Long, Pending<?>> pending = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<ChannelKey, Channel> channels = new ConcurrentHashMap<>();

  private record ChannelKey(String region, String model) {}

  private BookRelay(Settings settings, ActorSystem<?> system) {
    this.settings = settings;
    this.scheduler = org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(system).scheduler();
    this.timeouts = system.executionContext();
    this.cluster = Cluster.get(system);
    // answers are completed on the endpoint's thread: the callers' continuations run there, beside admission
    this.endpointActor = system.systemActorOf(Behaviors.setup(ctx -> Behaviors.receive(EndpointMessage.class)
        .onMessage(Answers.class, answers -> {
          for (Answer answer : answers.answers()) {
            answered(answer, answers.admission());
          }
          return Behaviors.same();
        })
        .onMessage(Watch.class, watch -> {
          ctx.watchWith(watch.admission(), new AdmissionStopped(watch.channel(), watch.admission()));
          return Behaviors.same();
        })
        .onMessage(Drain.class, drain -> {
          drain.channel().drain();
          return Behaviors.same();
        })
        .onMessage(AdmissionStopped.class, stopped -> {
          stopped.channel().admissionStopped(stopped.admission());
          return Behaviors.same();
        })
        .build()), "kvrouter-book-relay", DispatcherSelector.fromConfig(AdmissionConfig.DISPATCHER));
    this.endpoint = endpointActor.narrow();
  }

  /** This node's relay, or null when Books are relayed by an ask each ({@code mode = ask}). */
  static BookRelay start(ActorSystem<?> system) {
    Settings settings = Settings.fromConfig(system.settings().config());
    return settings.mode() == Mode.ASK ? null : new BookRelay(settings, system);
  }

  /** Calls unanswered (tests check that none is left behind). */
  public int pending() {
    return pending.size();
  }

  /**
   * Sends a Book of {@code model} to its actor in {@code region} through {@code entity} (makes the region's shard
   * region reference, or its proxy's in another data center); completes with the actor's reply, or a
   * {@link TimeoutException} after {@code timeout}.
   */
  CompletionStage<ModelAdmission.BookReply> book(String model, String region,
      Supplier<EntityRef<ModelAdmission.Command>> entity, SelectionRequest request, long nonce, Duration timeout) {
    // a model has an actor per region: one channel each
    ModelAdmission.RelayedBook book = new ModelAdmission.RelayedBook(request, nonce, timeout.toMillis());
    Pending<ModelAdmission.BookReply> call = new Pending<>(channel(model, region, entity), nonce, book, null,
        timeout.toMillis());
    if (pending.putIfAbsent(nonce, call) != null) {
      return CompletableFuture.failedFuture(new IllegalStateException("nonce " + nonce + " is in flight already"));
    }
    return started(call, timeout);
  }

  /**
   * Sends a Release, MarkPrefillDone or Renew of a booking of {@code model} to its actor in {@code region}, as
   * {@link #book} sends a Book; completes with its result, or a {@link TimeoutException} after {@code timeout} (the
   * mutation may have been applied: the caller's retry finds it done).
   */
  CompletionStage<MutationResult> mutate(String model, String region,
      Supplier<EntityRef<ModelAdmission.Command>> entity, ModelAdmission.MutationKind kind, String requestId,
      long attempt, Duration timeout) {
    Channel channel = channel(model, region, entity);
    while (true) {
      long nonce = java.util.concurrent.ThreadLocalRandom.current().nextLong();
      Pending<MutationResult> call = new Pending<>(channel, nonce, null,
          new ModelAdmission.RelayedMutation(kind, requestId, attempt, nonce), timeout.toMillis());
      if (pending.putIfAbsent(nonce, call) == null) {
        return started(call, timeout);
      }
    }
  }

  /** A model has an actor per region: one channel each; {@code entity} is made only for a new channel. */
  private Channel channel(String model, String region, Supplier<EntityRef<ModelAdmission.Command>> entity) {
    return channels.computeIfAbsent(new ChannelKey(region, model), key -> new Channel(entity.get()));
  }

  private <T> CompletionStage<T> started(Pending<T> call, Duration timeout) {
    call.timer = scheduler.scheduleOnce(scala.concurrent.duration.Duration.fromNanos(timeout.toNanos()),
        () -> timedOut(call), timeouts);
    call.channel.send(call);
    return call;
  }

  @SuppressWarnings("unchecked")
  private void answered(Answer answer, ActorRef<ModelAdmission.Command> admission) {
    Pending<?> call = pending.remove(answer.nonce());
    if (call == null) {
      return; // timed out first: BookCall has undone a Book; a mutation's caller retries
    }
    call.timer.cancel();
    if (admission != null) {
      call.channel.sendStraightTo(admission);
    }
    call.channel.done();
    if (call.book != null) {
      ((Pending<ModelAdmission.BookReply>) call).complete(answer.reply());
    } else {
      ((Pending<MutationResult>) call).complete(answer.mutated());
    }
  }

  private void timedOut(Pending<?> call) {
    if (pending.remove(call.nonce, call)) {
      call.channel.timedOut(call);
      call.completeExceptionally(new TimeoutException("relayed " + call.describe() + " not answered in "
          + call.timeoutMillis + " ms"));
    }
  }

  /** Whether the node at {@code address} is this one, or a member neither downed, removed nor unreachable. */
  private boolean isLiveMember(org.apache.pekko.actor.Address address) {
    if (!address.hasGlobalScope() || address.equals(cluster.selfMember().address())) {
      return true;
    }
    for (Member member : cluster.state().getMembers()) {
      if (member.address().equals(address)) {
        return member.status() != MemberStatus.down() && member.status() != MemberStatus.removed()
            && !cluster.state().getUnreachable().contains(member);
      }
    }
    return false;
  }

  /** One unanswered relayed call: a Book or a mutation (exactly one is set). */
  private static final class Pending<T> extends CompletableFuture<T> {
    final Channel channel;
    final long nonce;
    final ModelAdmission.RelayedBook book;
    final ModelAdmission.RelayedMutation mutation;
    final long timeoutMillis;
    volatile Cancellable timer;
    /** The admission actor it was sent straight to, or null (through the shard region); under the channel's lock. */
    ActorRef<ModelAdmission.Command> sentTo;

    Pending(Channel channel, long nonce, ModelAdmission.RelayedBook book, ModelAdmission.RelayedMutation mutation,
        long timeoutMillis) {
      this.channel = channel;
      this.nonce = nonce;
      this.book = book;
      this.mutation = mutation;
      this.timeoutMillis = timeoutMillis;
    }

    String describe() {
      return book != null ? "Book of '" + book.request().requestId() + "'"
          : mutation.kind().callName() + " of '" + mutation.requestId() + "' attempt " + mutation.attempt();
    }
  }

  /** Sends {@code calls} to {@code to} (or through {@code entity}): the Books in one message, the mutations in another. */
  private void sendCalls(List<Pending<?>> calls, ActorRef<ModelAdmission.Command> to,
      EntityRef<ModelAdmission.Command> entity, boolean wantsAdmission) {
    List<ModelAdmission.RelayedBook> books = new ArrayList<>(calls.size());
    List<ModelAdmission.RelayedMutation> mutations = new ArrayList<>(0);
    for (Pending<?> call : calls) {
      if (call.book != null) {
        books.add(call.book);
      } else {
        mutations.add(call.mutation);
      }
    }
    if (!books.isEmpty()) {
      tell(to, entity, new ModelAdmission.RelayBooks(endpoint, books, wantsAdmission));
    }
    if (!mutations.isEmpty()) {
      tell(to, entity, new ModelAdmission.RelayMutations(endpoint, mutations, wantsAdmission));
    }
  }

  private static void tell(ActorRef<ModelAdmission.Command> to, EntityRef<ModelAdmission.Command> entity,
      ModelAdmission.Command message) {
    if (to != null) {
      to.tell(message);
    } else {
      entity.tell(message);
    }
  }

  /**
   * The relayed Books of one model: how many are unanswered, and those gathered for the next batch. Below the
   * threshold a Book is sent by its caller's thread at once; above it, it joins the queue, and the endpoint drains
   * the queue into batches: what arrives while the endpoint is busy (sending the last batch, completing answers)
   * goes in the next one, so a batch waits one hop on the endpoint, not a round trip.
   */
  private final class Channel {
    private final EntityRef<ModelAdmission.Command> entity;
    /** The model's admission actor while it is known to run (direct on), else null. */
    private ActorRef<ModelAdmission.Command> admission;
    private final java.util.concurrent.atomic.AtomicInteger unanswered = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.ConcurrentLinkedQueue<Pending<?>> gathered =
        new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** A Drain of this channel is on its way to the endpoint. */
    private final java.util.concurrent.atomic.AtomicBoolean draining = new java.util.concurrent.atomic.AtomicBoolean();
    private final Drain drain = new Drain(this);

    Channel(EntityRef<ModelAdmission.Command> entity) {
      this.entity = entity;
    }

    void send(Pending<?> call) {
      int now = unanswered.incrementAndGet();
      if (settings.coalesceAbove() == 0 || now <= settings.coalesceAbove()) {
        tell(List.of(call));
        return;
      }
      gathered.add(call);
      if (draining.compareAndSet(false, true)) {
        endpointActor.tell(drain);
      }
    }

    /** On the endpoint: sends what was gathered, in batches of at most max-batch (a Book timed out meanwhile stays). */
    void drain() {
      draining.set(false);
      List<Pending<?>> batch = new ArrayList<>();
      for (Pending<?> call; (call = gathered.poll()) != null; ) {
        if (pending.get(call.nonce) != call) {
          continue;
        }
        batch.add(call);
        if (batch.size() == settings.maxBatch()) {
          tell(batch);
          batch = new ArrayList<>();
        }
      }
      if (!batch.isEmpty()) {
        tell(batch);
      }
    }

    /** An answer arrived. */
    void done() {
      unanswered.decrementAndGet();
    }

    /** A Book timed out: one still gathered is never sent (its CancelBook then finds nothing). */
    void timedOut(Pending<?> call) {
      unanswered.decrementAndGet();
      gathered.remove(call);
    }

    /** An answer named the admission actor: later Books go straight to it, while it runs. */
    void sendStraightTo(ActorRef<ModelAdmission.Command> actor) {
      synchronized (this) {
        if (admission != null) {
          return;
        }
        admission = actor;
      }
      endpointActor.tell(new Watch(this, actor));
    }

    /**
     * The actor stopped: Books go through the region again. While its node is still a member (a hand-off, a
     * passivation), those it never answered are sent again there. When its node is gone (downed, removed) they are
     * not: the next incarnation answers what the dead one left queued ({@code RECOVERING}), and a Book sent again
     * would queue afresh for a caller already answered; a booking whose answer died with it is cancelled by the
     * caller's timeout, as after an ask.
     */
    void admissionStopped(ActorRef<ModelAdmission.Command> actor) {
      List<Pending<?>> again = new ArrayList<>();
      boolean nodeLives = isLiveMember(actor.path().address());
      synchronized (this) {
        if (actor.equals(admission)) {
          admission = null;
        }
        for (Pending<?> call : nodeLives ? pending.values() : List.<Pending<?>>of()) {
          if (call.channel == this && actor.equals(call.sentTo)) {
            call.sentTo = null;
            again.add(call);
          }
        }
      }
      if (!again.isEmpty()) {
        sendCalls(again, null, entity, false);
      }
    }

    private void tell(List<Pending<?>> batch) {
      ActorRef<ModelAdmission.Command> to;
      boolean wantsAdmission;
      synchronized (this) {
        to = admission;
        // until an answer names the actor, every send asks for it (one that asked may be lost with its answers)
        wantsAdmission = settings.direct() && to == null;
        for (Pending<?> call : batch) {
          call.sentTo = to;
        }
      }
      sendCalls(batch, to, entity, wantsAdmission);
    }
  }
}
