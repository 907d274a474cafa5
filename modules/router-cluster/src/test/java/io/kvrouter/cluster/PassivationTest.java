package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelClient;
import static io.kvrouter.cluster.TestCluster.join;
import static io.kvrouter.cluster.UnknownModelTest.entities;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.membership.Registered;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.junit.jupiter.api.Test;

/**
 * A model whose last worker is gone (no booking, no queue) passivates its admission actor and the node forgets it;
 * a later Register starts a new incarnation whose attempts lie above the earlier one's.
 */
class PassivationTest {
  @Test
  void anEmptyModelPassivatesOnceTheClockIsPastItsLastAttempt() {
    ManualClock clock = new ManualClock(1_000_000);
    try (TestCluster cluster = TestCluster.start(clock)) {
      ModelClient client = cluster.modelWithWorkers("gone", "round_robin", "a");
      List<Long> attempts = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        BookingAnswer booked = join(client.book(Requests.of("gone", "r" + i, 64), null));
        attempts.add(booked.attempt());
        assertThat(join(client.release("r" + i, booked.attempt(), null)).applied()).isTrue();
      }
      join(client.deregister("a", null));

      // the clock stands in the millisecond of the last attempt: a new incarnation could repeat it, so the actor stays.
      // It decides after every command: once a second command is answered, the first one's decision has been made.
      ActorRef<ModelAdmission.Command> actor = Hosting.localAdmission(cluster.routing, client.model());
      assertThat(actor).isNotNull();
      for (int i = 0; i < 2; i++) {
        join(AskPattern.<ModelAdmission.Command, ModelAdmission.StateReply>ask(actor, ModelAdmission.GetState::new,
            TestCluster.TIMEOUT, cluster.kit.system().scheduler()));
      }
      assertThat(Hosting.localAdmission(cluster.routing, client.model())).isEqualTo(actor);
      assertThat(entities(cluster)).containsExactly("gone");

      clock.advance(Duration.ofMillis(1));
      await().atMost(Duration.ofSeconds(10)).until(() -> entities(cluster).isEmpty());
      await().atMost(Duration.ofSeconds(10)).until(() -> cluster.routing.modelsHeld().isEmpty());

      ModelClient again = cluster.client("gone");
      join(again.register(TestCluster.worker("b"), null));
      ModelClient fresh = cluster.client("gone");
      assertThat(fresh.isKnown()).isTrue();
      BookingAnswer later = join(fresh.book(Requests.of("gone", "r-later", 64), null));
      assertThat(later.attempt()).isGreaterThan(attempts.stream().mapToLong(Long::longValue).max().orElseThrow());
      assertThat(entities(cluster)).containsExactly("gone");
    }
  }

  @Test
  void aRegisterRacingThePassivationReachesTheNextIncarnation() {
    ManualClock clock = new ManualClock(2_000_000);
    try (TestCluster cluster = TestCluster.start(clock)) {
      for (int round = 0; round < 20; round++) {
        ModelClient client = cluster.client("racy");
        join(client.register(TestCluster.worker("w" + round), null));
        ModelClient known = cluster.client("racy");
        // both sent before either answer: the Deregister empties the model, the Register lands while it passivates
        CompletionStage<Integer> deregistered = known.deregister("w" + round, null);
        CompletionStage<Registered> registered = known.register(TestCluster.worker("x" + round), null);
        join(deregistered);
        assertThat(join(registered).created()).isTrue();
        await().atMost(Duration.ofSeconds(10)).until(() -> cluster.client("racy").isKnown());
        assertThat(cluster.client("racy").view().worker("x" + round)).isNotNull();
        join(cluster.client("racy").deregister("x" + round, null));
        await().atMost(Duration.ofSeconds(10)).until(() -> entities(cluster).isEmpty());
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> cluster.routing.modelsHeld().isEmpty());
    }
  }
}
