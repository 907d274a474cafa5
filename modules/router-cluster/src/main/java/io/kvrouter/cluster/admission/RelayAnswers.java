package io.kvrouter.cluster.admission;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.Signal;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The relayed answers an admission actor decides while it handles one message (a batch of relayed Books, the
 * acknowledgement that releases many held answers), gathered per relaying node and sent when the message is done as
 * one {@link BookRelay.Answers} each: under load one delivery carries many answers, as one {@code RelayBooks}
 * carries many Books the other way.
 */
final class RelayAnswers {
  private static final class Gathered {
    final List<BookRelay.Answer> answers = new ArrayList<>();
    boolean wantsAdmission;
  }

  /** A relaying node or two per message, in the order their first answers were decided. */
  private final Map<ActorRef<BookRelay.Answers>, Gathered> gathered = new LinkedHashMap<>();
  private final ActorRef<ModelAdmission.Command> admission;

  RelayAnswers(ActorRef<ModelAdmission.Command> admission) {
    this.admission = admission;
  }

  /** Gathers the answer; {@code wantsAdmission}: its Book asked for the admission actor's reference. */
  void add(ActorRef<BookRelay.Answers> endpoint, BookRelay.Answer answer, boolean wantsAdmission) {
    Gathered g = gathered.computeIfAbsent(endpoint, e -> new Gathered());
    g.answers.add(answer);
    g.wantsAdmission |= wantsAdmission;
  }

  /** Sends what was gathered, one message per relaying node. */
  void send() {
    if (gathered.isEmpty()) {
      return;
    }
    for (Map.Entry<ActorRef<BookRelay.Answers>, Gathered> e : gathered.entrySet()) {
      Gathered g = e.getValue();
      e.getKey().tell(new BookRelay.Answers(List.copyOf(g.answers), g.wantsAdmission ? admission : null));
    }
    gathered.clear();
  }

  /** Wraps an actor's behavior so that what each message (or signal) decided is sent when it is handled. */
  static <T> Behavior<T> sentAfterEachMessage(RelayAnswers answers, Class<T> messages, Behavior<T> behavior) {
    return Behaviors.intercept(() -> new BehaviorInterceptor<T, T>(messages) {
      @Override
      public Behavior<T> aroundReceive(TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
        try {
          return target.apply(ctx, msg);
        } finally {
          answers.send();
        }
      }

      @Override
      public Behavior<T> aroundSignal(TypedActorContext<T> ctx, Signal signal, SignalTarget<T> target) {
        try {
          return target.apply(ctx, signal);
        } finally {
          answers.send();
        }
      }
    }, behavior);
  }
}
