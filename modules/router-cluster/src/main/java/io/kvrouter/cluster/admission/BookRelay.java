package io.kvrouter.cluster.admission;

import com.typesafe.config.Config;
import io.kvrouter.cluster.serialization.CborSerializable;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.selection.SelectionRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
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
 * How this node sends Books to a model's admission actor on another node without an ask per Book: one long-lived
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
   * A relayed Book's answer: its booking, or the error it was refused with (exactly one is set), and the Book's
   * nonce.
   */
  public record Answer(long nonce, BookingAnswer booked, RoutingError refused) implements CborSerializable {
    static Answer of(long nonce, ModelAdmission.BookReply reply) {
      return reply instanceof ModelAdmission.Booked booked
          ? new Answer(nonce, booked.answer(), null)
          : new Answer(nonce, null, ((ModelAdmission.Refused) reply).error());
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
  private final ConcurrentHashMap<Long, Pending> pending = new ConcurrentHashMap<>();
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

  /** Books unanswered (tests check that none is left behind). */
  public int pending() {
    return pending.size();
  }

  /**
   * Sends a Book of {@code model} to its actor in {@code region} through {@code entity} (the region's shard region,
   * or its proxy in another data center); completes with the actor's reply, or a {@link TimeoutException} after
   * {@code timeout}.
   */
  CompletionStage<ModelAdmission.BookReply> book(String model, String region, EntityRef<ModelAdmission.Command> entity,
      SelectionRequest request, long nonce, Duration timeout) {
    // a model has an actor per region: one channel each
    Channel channel = channels.computeIfAbsent(new ChannelKey(region, model), key -> new Channel(entity));
    ModelAdmission.RelayedBook book = new ModelAdmission.RelayedBook(request, nonce, timeout.toMillis());
    Pending call = new Pending(channel, book);
    if (pending.putIfAbsent(nonce, call) != null) {
      return CompletableFuture.failedFuture(new IllegalStateException("nonce " + nonce + " is in flight already"));
    }
    call.timer = scheduler.scheduleOnce(scala.concurrent.duration.Duration.fromNanos(timeout.toNanos()),
        () -> timedOut(call), timeouts);
    channel.send(call);
    return call;
  }

  private void answered(Answer answer, ActorRef<ModelAdmission.Command> admission) {
    Pending call = pending.remove(answer.nonce());
    if (call == null) {
      return; // timed out first: BookCall has undone it
    }
    call.timer.cancel();
    if (admission != null) {
      call.channel.sendStraightTo(admission);
    }
    call.channel.done();
    call.complete(answer.reply());
  }

  private void timedOut(Pending call) {
    if (pending.remove(call.book.nonce(), call)) {
      call.channel.timedOut(call);
      call.completeExceptionally(new TimeoutException("relayed Book of '" + call.book.request().requestId()
          + "' not answered in " + call.book.timeoutMillis() + " ms"));
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

  /** One unanswered relayed Book. */
  private static final class Pending extends CompletableFuture<ModelAdmission.BookReply> {
    final Channel channel;
    final ModelAdmission.RelayedBook book;
    volatile Cancellable timer;
    /** The admission actor it was sent straight to, or null (through the shard region); under the channel's lock. */
    ActorRef<ModelAdmission.Command> sentTo;

    Pending(Channel channel, ModelAdmission.RelayedBook book) {
      this.channel = channel;
      this.book = book;
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
    private final java.util.concurrent.ConcurrentLinkedQueue<Pending> gathered =
        new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** A Drain of this channel is on its way to the endpoint. */
    private final java.util.concurrent.atomic.AtomicBoolean draining = new java.util.concurrent.atomic.AtomicBoolean();
    private final Drain drain = new Drain(this);

    Channel(EntityRef<ModelAdmission.Command> entity) {
      this.entity = entity;
    }

    void send(Pending call) {
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
      List<Pending> batch = new ArrayList<>();
      for (Pending call; (call = gathered.poll()) != null; ) {
        if (pending.get(call.book.nonce()) != call) {
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
    void timedOut(Pending call) {
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
      List<ModelAdmission.RelayedBook> again = new ArrayList<>();
      boolean nodeLives = isLiveMember(actor.path().address());
      synchronized (this) {
        if (actor.equals(admission)) {
          admission = null;
        }
        for (Pending call : nodeLives ? pending.values() : List.<Pending>of()) {
          if (call.channel == this && actor.equals(call.sentTo)) {
            call.sentTo = null;
            again.add(call.book);
          }
        }
      }
      if (!again.isEmpty()) {
        entity.tell(new ModelAdmission.RelayBooks(endpoint, again, false));
      }
    }

    private void tell(List<Pending> batch) {
      if (batch == null) {
        return;
      }
      List<ModelAdmission.RelayedBook> books = new ArrayList<>(batch.size());
      ActorRef<ModelAdmission.Command> to;
      boolean wantsAdmission;
      synchronized (this) {
        to = admission;
        // until an answer names the actor, every send asks for it (one that asked may be lost with its answers)
        wantsAdmission = settings.direct() && to == null;
        for (Pending call : batch) {
          call.sentTo = to;
          books.add(call.book);
        }
      }
      ModelAdmission.RelayBooks message = new ModelAdmission.RelayBooks(endpoint, books, wantsAdmission);
      if (to != null) {
        to.tell(message);
      } else {
        entity.tell(message);
      }
    }
  }
}
