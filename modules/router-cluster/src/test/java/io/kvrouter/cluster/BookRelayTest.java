package io.kvrouter.cluster;

import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.cluster.admission.ModelAdmission;
import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.testkit.Requests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Books through a node that does not host the model's actor go through that node's reply endpoint
 * ({@code kvrouter.admission.relay.mode = reply-endpoint}), correlated by nonce; with coalescing on, several in one
 * message; with {@code direct = on}, straight to the actor once an answer named it. Every message is serialized (the
 * test {@code application.conf}).
 */
class BookRelayTest {
  /** Coalescing from the third unanswered Book of a model on, at most 16 a batch; straight to the actor. */
  private static final String COALESCING = """
      kvrouter.admission.relay.coalesce-above = 2
      kvrouter.admission.relay.max-batch = 16
      kvrouter.admission.relay.direct = on
      """;
  /** The size of every RelayBooks an admission actor of the region received, while recording. */
  private static final ConcurrentLinkedQueue<Integer> BATCHES = new ConcurrentLinkedQueue<>();
  /** RelayBooks received from a relay that knew the actor (sent straight to it), while recording. */
  private static final java.util.concurrent.atomic.AtomicInteger STRAIGHT = new java.util.concurrent.atomic.AtomicInteger();
  private static final AtomicBoolean RECORDING = new AtomicBoolean();
  /** Each relayed mutation an admission actor of the region received, by kind, and its batch sizes, while recording. */
  private static final ConcurrentHashMap<ModelAdmission.MutationKind, java.util.concurrent.atomic.AtomicInteger>
      MUTATIONS = new ConcurrentHashMap<>();
  private static final ConcurrentLinkedQueue<Integer> MUTATION_BATCHES = new ConcurrentLinkedQueue<>();
  /** Release, MarkPrefillDone and Renew commands asked of an admission actor (not relayed), while recording. */
  private static final java.util.concurrent.atomic.AtomicInteger ASKED_MUTATIONS =
      new java.util.concurrent.atomic.AtomicInteger();

  private static TestRegion region;

  @BeforeAll
  static void start() {
    region = TestRegion.start(3, COALESCING, BookRelayTest::recordingBatches);
  }

  @AfterAll
  static void stop() {
    region.close();
  }

  private static Behavior<ModelAdmission.Command> recordingBatches(Behavior<ModelAdmission.Command> admission) {
    return Behaviors.intercept(() -> new BehaviorInterceptor<ModelAdmission.Command, ModelAdmission.Command>(
        ModelAdmission.Command.class) {
      @Override
      public Behavior<ModelAdmission.Command> aroundReceive(TypedActorContext<ModelAdmission.Command> ctx,
          ModelAdmission.Command message, ReceiveTarget<ModelAdmission.Command> target) {
        if (message instanceof ModelAdmission.RelayBooks relayed && RECORDING.get()) {
          BATCHES.add(relayed.books().size());
          if (!relayed.wantsAdmission()) {
            STRAIGHT.incrementAndGet();
          }
        }
        if (message instanceof ModelAdmission.RelayMutations relayed && RECORDING.get()) {
          MUTATION_BATCHES.add(relayed.mutations().size());
          relayed.mutations().forEach(m -> MUTATIONS.computeIfAbsent(m.kind(),
              k -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet());
        }
        if ((message instanceof ModelAdmission.Release || message instanceof ModelAdmission.MarkPrefillDone
            || message instanceof ModelAdmission.Renew) && RECORDING.get()) {
          ASKED_MUTATIONS.incrementAndGet();
        }
        return target.apply(ctx, message);
      }
    }, admission);
  }

  /** A model hosted on node 3, and node 1's facade of it once node 1 knows its workers. */
  private static ModelClient relayedModel(String prefix) {
    TestRegion.Node relay = region.node(0);
    String model = Hosting.modelHostedOn(region.node(2), relay, prefix, "w1", "w2", "w3", "w4");
    await().atMost(TestRegion.TIMEOUT).until(() -> relay.view(model) != null
        && relay.view(model).workers().size() == 4);
    assertThat(Hosting.localAdmission(relay, model)).as("the actor runs elsewhere").isNull();
    return relay.client(model);
  }

  @Test
  void concurrentRelayedBooksAreEachAnsweredOnceWithTheirOwnBooking() {
    ModelClient client = relayedModel("correlation");
    // the first answer names the actor
    BookingAnswer first = join(client.book(Requests.of(client.model(), "first", 64), null));
    STRAIGHT.set(0);
    RECORDING.set(true);
    int books = 400;
    List<CompletableFuture<BookingAnswer>> calls = new ArrayList<>();
    for (int i = 0; i < books; i++) {
      calls.add(client.book(Requests.of(client.model(), "c-" + i, 64), Duration.ofSeconds(10)));
    }
    Set<String> answeredAs = ConcurrentHashMap.newKeySet();
    for (int i = 0; i < books; i++) {
      BookingAnswer answer = join(calls.get(i));
      assertThat(answer.requestId()).as("call %d's answer", i).isEqualTo("c-" + i);
      answeredAs.add(answer.requestId());
    }
    assertThat(answeredAs).hasSize(books);
    RECORDING.set(false);
    assertThat(STRAIGHT.get()).as("batches sent straight to the actor").isPositive();
    assertThat(region.node(0).routing().bookRelay().pending()).as("relayed Books unanswered").isZero();

    answeredAs.add("first");
    ModelSnapshot booked = join(client.snapshot(null));
    assertThat(booked.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId)
        .containsExactlyInAnyOrderElementsOf(answeredAs);
    List<BookingAnswer> answers = new ArrayList<>(calls.stream().map(CompletableFuture::join).toList());
    answers.add(first);
    releaseAll(client, answers);
  }

  @Test
  void coalescedBooksAreEachAnsweredOrRefusedOnceAndARefusalBooksNothing() {
    ModelClient client = relayedModel("coalescing");
    int books = 300;
    BATCHES.clear();
    RECORDING.set(true);
    List<CompletableFuture<BookingAnswer>> calls = new ArrayList<>();
    for (int i = 0; i < books; i++) {
      var request = Requests.of(client.model(), "k-" + i, 64);
      // every third pinned to a worker the model does not have: refused
      calls.add(client.book(i % 3 == 0 ? Requests.pinned(request, "ghost", null) : request, Duration.ofSeconds(10)));
    }
    List<BookingAnswer> answered = new ArrayList<>();
    for (int i = 0; i < books; i++) {
      CompletableFuture<BookingAnswer> call = calls.get(i);
      await().pollDelay(Duration.ZERO).atMost(TestRegion.TIMEOUT).until(call::isDone);
      if (i % 3 == 0) {
        assertThat(call).as("Book %d, pinned to no worker", i).isCompletedExceptionally();
        Throwable cause = call.handle((a, f) -> f instanceof CompletionException ? f.getCause() : f).join();
        assertThat(cause).isInstanceOf(RoutingException.class);
      } else {
        BookingAnswer answer = call.join();
        assertThat(answer.requestId()).isEqualTo("k-" + i);
        answered.add(answer);
      }
    }
    RECORDING.set(false);
    assertThat(BATCHES.stream().mapToInt(Integer::intValue).sum()).as("Books the owner received").isEqualTo(books);
    assertThat(BATCHES).as("batch sizes").anyMatch(size -> size > 1).allMatch(size -> size <= 16);
    assertThat(region.node(0).routing().bookRelay().pending()).isZero();

    ModelSnapshot booked = join(client.snapshot(null));
    assertThat(booked.bookings()).extracting(ModelSnapshot.BookingSnapshot::requestId)
        .containsExactlyInAnyOrderElementsOf(answered.stream().map(BookingAnswer::requestId).toList());
    releaseAll(client, answered);
  }

  /**
   * Renew, MarkPrefillDone and Release of bookings made through the relay go through it too, correlated as Books
   * are and coalesced under load: each call answered once with its own booking's result, each applied once (a second
   * Release is not applied), no ask among them, nothing left pending or booked.
   */
  @Test
  void relayedMutationsAreEachAnsweredOnceAndAppliedOnce() {
    ModelClient client = relayedModel("mutations");
    int books = 150;
    List<BookingAnswer> answers = new ArrayList<>();
    for (int i = 0; i < books; i++) {
      answers.add(join(client.book(Requests.of(client.model(), "m-" + i, 64), Duration.ofSeconds(10))));
    }
    MUTATIONS.clear();
    MUTATION_BATCHES.clear();
    ASKED_MUTATIONS.set(0);
    RECORDING.set(true);
    List<CompletableFuture<io.kvrouter.core.admission.MutationResult>> renewed = new ArrayList<>();
    List<CompletableFuture<io.kvrouter.core.admission.MutationResult>> prefilled = new ArrayList<>();
    for (BookingAnswer answer : answers) {
      renewed.add(client.renew(answer.requestId(), answer.attempt(), Duration.ofSeconds(10)).toCompletableFuture());
      prefilled.add(client.markPrefillDone(answer.requestId(), answer.attempt(), Duration.ofSeconds(10))
          .toCompletableFuture());
    }
    for (int i = 0; i < books; i++) {
      assertThat(join(renewed.get(i)).applied()).as("renew of m-%d", i).isTrue();
      assertThat(join(prefilled.get(i)).applied()).as("prefill done of m-%d", i).isTrue();
    }
    List<CompletableFuture<io.kvrouter.core.admission.MutationResult>> released = new ArrayList<>();
    for (BookingAnswer answer : answers) {
      released.add(client.release(answer.requestId(), answer.attempt(), Duration.ofSeconds(10)).toCompletableFuture());
    }
    released.forEach(r -> assertThat(join(r).applied()).isTrue());
    for (BookingAnswer answer : answers.subList(0, 10)) {
      assertThat(join(client.release(answer.requestId(), answer.attempt(), null)).applied())
          .as("a second release of %s", answer.requestId()).isFalse();
    }
    RECORDING.set(false);
    assertThat(MUTATIONS.get(ModelAdmission.MutationKind.RENEW)).hasValue(books);
    assertThat(MUTATIONS.get(ModelAdmission.MutationKind.MARK_PREFILL_DONE)).hasValue(books);
    assertThat(MUTATIONS.get(ModelAdmission.MutationKind.RELEASE)).hasValue(books + 10);
    assertThat(MUTATION_BATCHES).as("batch sizes").anyMatch(size -> size > 1).allMatch(size -> size <= 16);
    assertThat(ASKED_MUTATIONS).as("mutations sent by an ask").hasValue(0);
    assertThat(region.node(0).routing().bookRelay().pending()).as("relayed calls unanswered").isZero();
    assertThat(join(client.snapshot(null)).bookings()).as("live bookings").isEmpty();
  }

  /**
   * A caller's continuation runs where the answer arrived (the relay's endpoint; on the owner, the actor's thread),
   * never on the JDK common pool.
   */
  @Test
  void answersCompleteWhereTheyArriveNotOnTheCommonPool() {
    ModelClient client = relayedModel("threads");
    Set<String> threads = ConcurrentHashMap.newKeySet();
    String caller = Thread.currentThread().getName();
    // a call answered before its callback is registered runs that callback here, on the caller: send rounds of 50
    // until some callback ran where an answer arrived (at most 5 rounds)
    Set<String> completing = Set.of();
    for (int round = 0; round < 5 && completing.isEmpty(); round++) {
      List<CompletableFuture<BookingAnswer>> calls = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        CompletableFuture<BookingAnswer> call = client.book(Requests.of(client.model(), "t-" + round + "-" + i, 64),
            null);
        call.whenComplete((a, f) -> threads.add(Thread.currentThread().getName()));
        calls.add(call);
      }
      releaseAll(client, calls.stream().map(TestCluster::join).toList());
      completing = threads.stream().filter(t -> !t.equals(caller)).collect(Collectors.toSet());
    }
    assertThat(completing).as("threads that completed a relayed Book").isNotEmpty()
        .allSatisfy(t -> assertThat(t).doesNotContain("commonPool").contains("kvrouter.admission.dispatcher"));

    // on the owner the ask goes to the actor here: its answer completes the call where the actor sent it
    ModelClient owner = region.node(2).client(client.model());
    Set<String> ownerThreads = ConcurrentHashMap.newKeySet();
    List<CompletableFuture<BookingAnswer>> local = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      CompletableFuture<BookingAnswer> call = owner.book(Requests.of(client.model(), "o-" + i, 64), null);
      call.whenComplete((a, f) -> ownerThreads.add(Thread.currentThread().getName()));
      local.add(call);
    }
    List<BookingAnswer> ownerAnswers = local.stream().map(TestCluster::join).toList();
    assertThat(ownerThreads).as("threads that completed a Book on the owner")
        .allSatisfy(t -> assertThat(t).doesNotContain("commonPool"));
    releaseAll(owner, ownerAnswers);
  }

  private static void releaseAll(ModelClient client, List<BookingAnswer> answers) {
    List<CompletableFuture<?>> releases = new ArrayList<>();
    for (BookingAnswer answer : answers) {
      releases.add(client.release(answer.requestId(), answer.attempt(), null).toCompletableFuture());
    }
    releases.forEach(r -> assertThat(((io.kvrouter.core.admission.MutationResult) join(r)).applied()).isTrue());
    assertThat(join(client.snapshot(null)).bookings()).as("live bookings after every release").isEmpty();
  }
}
