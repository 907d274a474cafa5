package io.kvrouter.cluster.admission;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.error.RoutingError;
import java.util.List;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * An admission actor's relayed answers leave as one message per relaying node when the message that decided them is
 * done (every message serialized: the test {@code application.conf}).
 */
class RelayAnswersTest {
  private static ActorTestKit testKit;

  @BeforeAll
  static void start() {
    testKit = ActorTestKit.create("relay-answers", com.typesafe.config.ConfigFactory.load());
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  /** Stands in for the admission actor: each {@code Decide} gathers its answers, as a RelayBooks' Books do. */
  private record Decide(List<ActorRef<BookRelay.Answers>> to, List<Long> nonces, boolean wantsAdmission)
      implements NoSerializationVerificationNeeded {}

  private static Behavior<Decide> deciding(ActorRef<ModelAdmission.Command> admission) {
    return Behaviors.setup(ctx -> {
      RelayAnswers answers = new RelayAnswers(admission);
      return RelayAnswers.sentAfterEachMessage(answers, Decide.class, Behaviors.receive(Decide.class)
          .onMessage(Decide.class, m -> {
            for (int i = 0; i < m.nonces().size(); i++) {
              answers.add(m.to().get(i), new BookRelay.Answer(m.nonces().get(i), null, refusal(), null), m.wantsAdmission());
            }
            return Behaviors.same();
          })
          .build());
    });
  }

  private static RoutingError refusal() {
    return RoutingError.unavailable("NO_ENDPOINTS", "no worker");
  }

  @Test
  void theAnswersOfOneMessageLeaveAsOneMessagePerNodeInOrder() {
    TestProbe<BookRelay.Answers> a = testKit.createTestProbe();
    TestProbe<BookRelay.Answers> b = testKit.createTestProbe();
    ActorRef<ModelAdmission.Command> self = testKit.<ModelAdmission.Command>createTestProbe().getRef();
    ActorRef<Decide> admission = testKit.spawn(deciding(self));
    admission.tell(new Decide(List.of(a.getRef(), b.getRef(), a.getRef(), a.getRef()), List.of(1L, 2L, 3L, 4L), false));

    BookRelay.Answers toA = a.receiveMessage();
    assertThat(toA.answers()).extracting(BookRelay.Answer::nonce).containsExactly(1L, 3L, 4L);
    assertThat(toA.admission()).as("no Book asked for the actor").isNull();
    assertThat(b.receiveMessage().answers()).extracting(BookRelay.Answer::nonce).containsExactly(2L);

    // the next message's answers go on their own: nothing gathered before is sent again
    admission.tell(new Decide(List.of(a.getRef()), List.of(5L), true));
    BookRelay.Answers next = a.receiveMessage();
    assertThat(next.answers()).extracting(BookRelay.Answer::nonce).containsExactly(5L);
    assertThat(next.admission()).as("a Book asked for the actor").isEqualTo(self);
    // and nothing else went out meanwhile: each probe's next message is the next decision's
    admission.tell(new Decide(List.of(b.getRef(), a.getRef()), List.of(6L, 7L), false));
    assertThat(b.receiveMessage().answers()).extracting(BookRelay.Answer::nonce).containsExactly(6L);
    assertThat(a.receiveMessage().answers()).extracting(BookRelay.Answer::nonce).containsExactly(7L);
  }

  @Test
  void aMessageThatDecidesNoRelayedAnswerSendsNothing() {
    TestProbe<BookRelay.Answers> a = testKit.createTestProbe();
    ActorRef<Decide> admission = testKit.spawn(deciding(testKit.<ModelAdmission.Command>createTestProbe().getRef()));
    admission.tell(new Decide(List.of(), List.of(), true));
    admission.tell(new Decide(List.of(a.getRef()), List.of(9L), false));
    assertThat(a.receiveMessage().answers()).extracting(BookRelay.Answer::nonce).containsExactly(9L);
  }
}
