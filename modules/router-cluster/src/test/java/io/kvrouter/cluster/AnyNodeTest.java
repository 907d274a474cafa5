package io.kvrouter.cluster;

import io.kvrouter.cluster.admission.ModelClient;
import io.kvrouter.cluster.admission.ModelStateReport;
import static io.kvrouter.cluster.TestCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.admission.ModelSnapshot;
import io.kvrouter.core.explain.Explanation;
import io.kvrouter.core.selection.SelectionResult;
import io.kvrouter.core.testkit.Requests;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Every node of a region serves every model of it, whichever node hosts the model's admission actor. */
class AnyNodeTest {
  private static TestRegion region;

  @BeforeAll
  static void start() {
    region = TestRegion.start(3);
  }

  @AfterAll
  static void stop() {
    region.close();
  }

  @Test
  void aModelRegisteredOnOneNodeIsSelectedAndBookedOnAnotherAndReleasedOnTheFirst() {
    TestRegion.Node a = region.node(0);
    TestRegion.Node b = region.node(1);
    String model = Hosting.modelHostedOn(region.node(2), a, "any", "w1", "w2");

    await().atMost(TestRegion.TIMEOUT).until(() -> b.sees(model));
    SelectionResult selected = b.client(model).selectWithoutAdmission(Requests.of(model, "s1", 64));
    assertThat(selected.rank().workerId()).isIn("w1", "w2");
    BookingAnswer booked = join(b.client(model).book(Requests.of(model, "r1", 64), null));
    assertThat(booked.selection().rank().workerId()).isIn("w1", "w2");

    assertThat(join(a.client(model).release("r1", booked.attempt(), null)).applied()).isTrue();
    ModelSnapshot after = join(b.client(model).snapshot(null));
    assertThat(after.bookings()).isEmpty();
    assertThat(after.workers()).allSatisfy(w -> assertThat(w.ranks())
        .allSatisfy(r -> assertThat(r.load().inFlight()).isZero()));
  }

  /**
   * What a Book teaches the owner's approximate KV index travels with the booking: another node's index learns the
   * same prefix, so its kv Selects see the overlap.
   */
  @Test
  void aBookThroughOneNodeTeachesTheKvIndexOfAnother() {
    TestRegion.Node a = region.node(0);
    TestRegion.Node c = region.node(1);
    String model = Hosting.modelHostedOn(region.node(2), a, "kv", "w1", "w2", "w3", "w4");
    // Dynamo's preset: no load bound, so the booked rank, whose live booking shares the prefix, stays the cheapest
    join(a.client(model).setPolicy("kv", java.util.Map.of("seed", "3", "preset", "dynamo"), null));
    long[] prefix = {11, 12, 13, 14, 15, 16, 17, 18};
    BookingAnswer booked = join(a.client(model).book(withHashes(model, "prompt", prefix), null));

    await().atMost(TestRegion.TIMEOUT).untilAsserted(() -> {
      SelectionResult elsewhere = c.client(model).selectWithoutAdmission(withHashes(model, "again", prefix));
      assertThat(elsewhere.overlapBlocks()).as("blocks cached, as node c sees it").isEqualTo(prefix.length);
      assertThat(elsewhere.rank()).isEqualTo(booked.selection().rank());
    });
    assertThat(join(c.client(model).release("prompt", booked.attempt(), null)).applied()).isTrue();
  }

  private static io.kvrouter.core.selection.SelectionRequest withHashes(String model, String requestId,
      long[] hashes) {
    return new io.kvrouter.core.selection.SelectionRequest(model, requestId, hashes, hashes.length * 16, 0, null,
        null, null, 0, null, null, null);
  }

  /**
   * A Select is kept by the node that answered it, a Book by the node hosting the actor: a non-host tells its own
   * Selects and the host's Books (asked of the actor, its reply serialized); the host tells its Books only.
   */
  @Test
  void explainOnANonHostMergesItsSelectsWithTheHostsBooks() {
    TestRegion.Node host = region.node(2);
    TestRegion.Node other = region.node(1);
    String model = Hosting.modelHostedOn(host, other, "explain", "w1", "w2");
    await().atMost(TestRegion.TIMEOUT).until(() -> other.sees(model));
    // nodes' decisions merge by wall-clock millisecond: one millisecond apart each, so their order is exact
    other.client(model).selectWithoutAdmission(Requests.of(model, "s1", 64));
    nextMillisecond();
    BookingAnswer booked = join(other.client(model).book(Requests.of(model, "b1", 64), null));
    nextMillisecond();
    other.client(model).selectWithoutAdmission(Requests.of(model, "s2", 64));

    ModelClient.ExplainReport here = join(other.client(model).explainRecent(0, null));
    assertThat(here.node()).isEqualTo(other.address().toString());
    assertThat(here.decisions()).extracting(Explanation::requestId).containsExactly("s2", "b1", "s1");
    assertThat(here.decisions()).extracting(Explanation::node).containsExactly(other.address().toString(),
        host.address().toString(), other.address().toString());
    Explanation book = here.decisions().get(1);
    assertThat(book.kind()).isEqualTo("book");
    assertThat(book.picked()).isEqualTo(booked.selection().rank());
    assertThat(book.candidates()).hasSize(2);
    assertThat(join(other.client(model).explainRecent(2, null)).decisions()).extracting(Explanation::requestId)
        .containsExactly("s2", "b1");

    ModelClient.ExplainReport atHost = join(host.client(model).explainRecent(0, null));
    assertThat(atHost.decisions()).extracting(Explanation::requestId).containsExactly("b1");
    assertThat(join(other.client(model).release("b1", booked.attempt(), null)).applied()).isTrue();
  }

  private static void nextMillisecond() {
    long now = System.currentTimeMillis();
    await().pollInterval(java.time.Duration.ofMillis(1)).atMost(TestRegion.TIMEOUT)
        .until(() -> System.currentTimeMillis() > now);
  }

  @Test
  void theStateNamesTheHostingNodeAndThisNodesRegionAndStaleness() {
    TestRegion.Node host = region.node(2);
    TestRegion.Node other = region.node(0);
    String model = Hosting.modelHostedOn(host, other, "state", "w1");
    await().atMost(TestRegion.TIMEOUT).until(() -> other.sees(model));

    ModelStateReport here = join(host.client(model).state(null));
    assertThat(here.hostNode()).isEqualTo(host.address().toString());
    assertThat(here.staleness().seqLag()).isZero();
    assertThat(here.staleness().ageMillis()).isZero();

    await().atMost(TestRegion.TIMEOUT).untilAsserted(() -> {
      ModelStateReport there = join(other.client(model).state(null));
      assertThat(there.hostNode()).isEqualTo(host.address().toString());
      assertThat(there.region()).isEqualTo(here.region());
      assertThat(there.staleness()).as("a replica's staleness").isNotNull();
      assertThat(there.staleness().epoch()).isEqualTo(here.snapshot().epoch());
      assertThat(there.staleness().viewVersion()).isEqualTo(here.snapshot().viewVersion());
      assertThat(there.staleness().awaitingSnapshot()).isFalse();
    });
  }
}
