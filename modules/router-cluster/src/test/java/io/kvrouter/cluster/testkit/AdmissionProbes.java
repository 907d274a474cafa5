package io.kvrouter.cluster.testkit;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Signal;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import io.kvrouter.cluster.serialization.CborSerializable;
import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.RouterCluster;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.selection.Selector;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;

/**
 * Test probes around the real admission actor, installed through {@link RouterCluster.AdmissionDecorator} (the
 * actor's protocol stays sealed and production runs without them). The probe intercepts its own messages before the
 * actor sees them and passes everything else through:
 *
 * <ul>
 *   <li>{@link SelectOnActor}: the reference advisory pick made on the actor, in mailbox order, from the view the
 *       actor published and with the same selection function its Books use;
 *   <li>optionally, every Book held back for a fixed delay before it reaches the actor (deadline and cancellation
 *       tests); a CancelBook for a Book still held drops it.
 * </ul>
 * Every probe message is {@link CborSerializable}, so it survives {@code pekko.actor.serialize-messages = on}.
 */
public final class AdmissionProbes {
  private AdmissionProbes() {}

  /** Asks the model's admission actor for an advisory pick. */
  public record SelectOnActor(SelectionRequest request, ActorRef<SelectReply> replyTo) implements CborSerializable {}

  public record SelectReply(SelectionResult result, RoutingError error) implements CborSerializable {}

  /** A Book coming back to the actor once its delay is over. */
  public record HeldBook(ModelAdmission.Book book) implements CborSerializable {}

  /** Answers {@link SelectOnActor}; Books go straight through. */
  public static RouterCluster.AdmissionDecorator selectOnActor(Clock clock) {
    return holdingBooks(clock, Duration.ZERO);
  }

  /** Answers {@link SelectOnActor} and holds every Book {@code bookDelay} before the actor sees it. */
  public static RouterCluster.AdmissionDecorator holdingBooks(Clock clock, Duration bookDelay) {
    return admission -> narrow(Behaviors.intercept(() -> new Probe(clock, bookDelay), admission));
  }

  /** The actor's advisory pick for {@code request} (the actor must run with a probe decorator). */
  public static CompletionStage<SelectionResult> selectOnActor(ActorSystem<?> system, SelectionRequest request,
      Duration timeout) {
    // like ModelClient: straight to the actor while it runs on this node, else through the shard region
    ActorRef<Object> here = RUNNING.get(new Running(system, request.model()));
    CompletionStage<SelectReply> reply = here != null
        ? AskPattern.ask(here, replyTo -> new SelectOnActor(request, replyTo), timeout, system.scheduler())
        : widen(ClusterSharding.get(system).entityRefFor(ModelAdmission.ENTITY_KEY, request.model()))
            .ask(replyTo -> new SelectOnActor(request, replyTo), timeout);
    return reply.thenApply(answer -> {
      if (answer.error() != null) {
        throw answer.error().toException();
      }
      return answer.result();
    });
  }

  // the actor's behaviour accepts Command only at compile time: the probe receives its own messages at runtime
  @SuppressWarnings("unchecked")
  private static Behavior<ModelAdmission.Command> narrow(Behavior<Object> behavior) {
    return (Behavior<ModelAdmission.Command>) (Behavior<?>) behavior;
  }

  @SuppressWarnings("unchecked")
  private static EntityRef<Object> widen(EntityRef<ModelAdmission.Command> ref) {
    return (EntityRef<Object>) (EntityRef<?>) ref;
  }

  /** A probed admission actor running on a node: (that node's system, the model). */
  private record Running(ActorSystem<?> system, String model) {}

  private static final Map<Running, ActorRef<Object>> RUNNING = new ConcurrentHashMap<>();

  private static Running running(ActorContext<Object> context) {
    // an entity actor is named by its URL-encoded entity id, the model
    return new Running(context.getSystem(), URLDecoder.decode(context.getSelf().path().name(), StandardCharsets.UTF_8));
  }

  private static final class Probe extends BehaviorInterceptor<Object, ModelAdmission.Command> {
    private final Clock clock;
    private final Duration bookDelay;
    private final Candidates scratch = new Candidates();
    private final Map<Long, Cancellable> held = new HashMap<>();

    Probe(Clock clock, Duration bookDelay) {
      super(Object.class);
      this.clock = clock;
      this.bookDelay = bookDelay;
    }

    @Override
    public Behavior<ModelAdmission.Command> aroundStart(TypedActorContext<Object> ctx,
        PreStartTarget<ModelAdmission.Command> target) {
      ActorContext<Object> context = ctx.asJava();
      RUNNING.put(running(context), context.getSelf());
      return target.start(ctx);
    }

    @Override
    public Behavior<ModelAdmission.Command> aroundSignal(TypedActorContext<Object> ctx, Signal signal,
        SignalTarget<ModelAdmission.Command> target) {
      if (signal instanceof PostStop) {
        ActorContext<Object> context = ctx.asJava();
        RUNNING.remove(running(context), context.getSelf());
      }
      return target.apply(ctx, signal);
    }

    @Override
    public Behavior<ModelAdmission.Command> aroundReceive(TypedActorContext<Object> ctx, Object message,
        ReceiveTarget<ModelAdmission.Command> target) {
      ActorContext<Object> context = ctx.asJava();
      if (message instanceof SelectOnActor select) {
        select.replyTo().tell(select(context.getSystem(), select.request()));
        return Behaviors.same();
      }
      if (message instanceof ModelAdmission.Book book && !bookDelay.isZero()) {
        held.put(book.nonce(), context.scheduleOnce(bookDelay, context.getSelf(), new HeldBook(book)));
        return Behaviors.same();
      }
      if (message instanceof HeldBook returning) {
        held.remove(returning.book().nonce());
        return target.apply(ctx, returning.book());
      }
      if (message instanceof ModelAdmission.CancelBook cancel) {
        Cancellable waiting = held.remove(cancel.nonce());
        if (waiting != null) {
          waiting.cancel();
        }
      }
      return target.apply(ctx, (ModelAdmission.Command) message);
    }

    private SelectReply select(ActorSystem<?> system, SelectionRequest request) {
      try {
        return new SelectReply(Selector.select(RouterCluster.get(system).view(request.model()), request, scratch,
            clock.millis()), null);
      } catch (RoutingException e) {
        return new SelectReply(null, e.error());
      }
    }
  }
}
