package io.kvrouter.core.replication;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.Fixtures;
import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.admission.BookingAnswer;
import io.kvrouter.core.membership.RankRecord;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.RecordingOverlapSource;
import io.kvrouter.core.testkit.Replication;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Epoch/seq ordering, chunk assembly, views and what a replica feeds, with named cases. */
class ModelReplicaTest {
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);
  private final List<SelectionView> published = new ArrayList<>();
  private final RecordingOverlapSource recording = new RecordingOverlapSource();
  private final List<String> booked = recording.booked;
  private final List<String> removedWorkers = recording.removedWorkers;
  private final ModelReplica replica = new ModelReplica("m", 10_000, recording, published::add);

  private AdmissionState owner(long epoch) {
    return new AdmissionState("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE, view -> {}, 0, epoch);
  }

  private static BookingAnswer book(AdmissionState owner, String requestId, long... hashes) {
    BookOutcome outcome = owner.book(new SelectionRequest("m", requestId, hashes, 16 * hashes.length + 1, 0, null,
        null, null, 0, null, null, null), 1, 0);
    return ((BookOutcome.Booked) outcome).answer();
  }

  /** A full copy of the owner as of its latest changes (drained first), applied. */
  private void snapshot(AdmissionState owner) {
    Replication.drainOne(owner, clock.millis());
    List<SnapshotChunk> chunks = owner.replicaSnapshot(clock.millis(), 1 << 20);
    for (SnapshotChunk chunk : chunks) {
      replica.apply(chunk, clock.millis());
    }
  }

  @Test
  void aNewIncarnationsVersionOneBeatsTheOldOnesVersion900() {
    AdmissionState old = owner(1_000);
    old.register(Fixtures.worker("a", 1));
    for (int i = 0; i < 900; i++) {
      old.setPolicy(i % 2 == 0 ? "round_robin" : "kv", Map.of());
    }
    snapshot(old);
    SelectionView oldView = replica.view();
    assertThat(oldView.version()).isGreaterThan(900);
    AdmissionState recovered = AdmissionState.recover("m", AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE,
        view -> {}, replica.recoveredState(), java.time.Duration.ofSeconds(2));
    assertThat(recovered.view().version()).isEqualTo(1);
    assertThat(recovered.view().isNewerThan(oldView)).isTrue();
    assertThat(oldView.isNewerThan(recovered.view())).isFalse();
    assertThat(oldView.isNewerThan(null)).isTrue();

    ReplicaDelta fromNew = Replication.drainOne(recovered, clock.millis());
    assertThat(replica.apply(fromNew, clock.millis())).as("a newer epoch without a snapshot").isEqualTo(
        ModelReplica.Outcome.GAP);
    assertThat(replica.staleness(clock.millis()).awaitingSnapshot()).isTrue();
    snapshot(recovered);
    assertThat(replica.epoch()).isEqualTo(recovered.epoch());
    assertThat(replica.view().version()).isEqualTo(1);
    assertThat(replica.view().epoch()).isEqualTo(recovered.epoch());
    old.setPolicy("kv", Map.of());
    assertThat(replica.apply(Replication.drainOne(old, clock.millis()), clock.millis()))
        .as("the old incarnation's later delta").isEqualTo(ModelReplica.Outcome.STALE);
    assertThat(replica.applyView(old.viewState(), clock.millis())).isFalse();
    assertThat(replica.view().epoch()).isEqualTo(recovered.epoch());
  }

  @Test
  void aNewerSnapshotDiscardsAPartialOlderOneAndAnOlderOneIsStale() {
    AdmissionState owner = owner(1_000);
    owner.register(Fixtures.worker("a", 1));
    for (int i = 0; i < 40; i++) {
      book(owner, "r" + i, new long[100]);
    }
    Replication.drainOne(owner, clock.millis());
    List<SnapshotChunk> older = owner.replicaSnapshot(clock.millis(), 2048);
    book(owner, "late", 1, 2);
    Replication.drainOne(owner, clock.millis());
    List<SnapshotChunk> newer = owner.replicaSnapshot(clock.millis(), 2048);
    assertThat(older.size()).isGreaterThan(2);
    assertThat(replica.apply(older.get(0), clock.millis())).isEqualTo(ModelReplica.Outcome.PARTIAL);
    assertThat(replica.apply(older.get(0), clock.millis())).as("a repeated chunk").isEqualTo(
        ModelReplica.Outcome.PARTIAL);
    for (int i = 0; i < newer.size(); i++) {
      assertThat(replica.apply(newer.get(i), clock.millis())).isEqualTo(
          i == newer.size() - 1 ? ModelReplica.Outcome.APPLIED : ModelReplica.Outcome.PARTIAL);
      if (i == 0) {
        // the older copy's remaining chunks are now stale: they cannot complete it
        assertThat(replica.apply(older.get(1), clock.millis())).isEqualTo(ModelReplica.Outcome.STALE);
      }
    }
    assertThat(replica.bookings()).containsKey("late").hasSize(41);
    assertThat(replica.seq()).isEqualTo(2);
    for (SnapshotChunk chunk : older) {
      assertThat(replica.apply(chunk, clock.millis())).isEqualTo(ModelReplica.Outcome.STALE);
    }
  }

  @Test
  void stalenessCountsTheSeqLagAndTheAgeSinceTheLastApply() {
    assertThat(replica.staleness(clock.millis())).isEqualTo(new Staleness(0, 0, 0, 0, 0, false));
    AdmissionState owner = owner(1_000);
    owner.register(Fixtures.worker("a", 1));
    snapshot(owner); // as of seq 1
    book(owner, "r1");
    ReplicaDelta d2 = Replication.drainOne(owner, clock.millis());
    book(owner, "r2");
    ReplicaDelta d3 = Replication.drainOne(owner, clock.millis());
    book(owner, "r3");
    ReplicaDelta d4 = Replication.drainOne(owner, clock.millis());
    assertThat(replica.apply(d2, clock.millis())).isEqualTo(ModelReplica.Outcome.APPLIED);
    clock.advance(java.time.Duration.ofMillis(250));
    assertThat(replica.apply(d4, clock.millis())).isEqualTo(ModelReplica.Outcome.GAP);
    clock.advance(java.time.Duration.ofMillis(50));
    Staleness lagging = replica.staleness(clock.millis());
    assertThat(lagging.seq()).isEqualTo(2);
    assertThat(lagging.seqLag()).isEqualTo(2);
    assertThat(lagging.ageMillis()).isEqualTo(300);
    assertThat(lagging.awaitingSnapshot()).isTrue();
    assertThat(lagging.epoch()).isEqualTo(1_000);
    assertThat(replica.apply(d3, clock.millis())).as("the missing delta, late").isEqualTo(
        ModelReplica.Outcome.APPLIED);
    assertThat(replica.apply(d4, clock.millis())).isEqualTo(ModelReplica.Outcome.APPLIED);
    Staleness caughtUp = replica.staleness(clock.millis());
    assertThat(caughtUp.seqLag()).isZero();
    assertThat(caughtUp.ageMillis()).isZero();
  }

  @Test
  void viewsArePublishedOnMembershipChangesWithASeededPickerAndLoadsLandInTheirCells() {
    AdmissionState owner = owner(1_000);
    owner.register(Fixtures.worker("a", 1));
    owner.register(Fixtures.worker("b", 1));
    owner.register(Fixtures.worker("c", 1));
    owner.setPolicy("random", Map.of("seed", "11"));
    snapshot(owner);
    assertThat(published).isNotEmpty();
    SelectionView view = published.get(published.size() - 1);
    assertThat(view).isSameAs(replica.view());
    assertThat(view.policy().policy().wireName()).isEqualTo("random");
    assertThat(view.policy().seed()).isEqualTo(11L);
    // the same seed picks the same sequence on owner and replica
    List<String> ownerPicks = new ArrayList<>();
    List<String> replicaPicks = new ArrayList<>();
    SelectionRequest request = new SelectionRequest("m", "x", null, 1, 0, null, null, null, 0, null, null, null);
    for (int i = 0; i < 20; i++) {
      ownerPicks.add(Selector.select(owner.view(), request, new Candidates(), clock.millis()).rank().workerId());
    }
    for (int i = 0; i < 20; i++) {
      replicaPicks.add(Selector.select(view, request, new Candidates(), clock.millis()).rank().workerId());
    }
    assertThat(replicaPicks).isEqualTo(ownerPicks);
    assertThat(new java.util.HashSet<>(ownerPicks)).as("random picks spread").hasSizeGreaterThan(1);
  }

  @Test
  void loadsAreWrittenInPlaceAndANewerRelayedRecordIsNotOverwrittenByAnOlderOne() {
    AdmissionState owner = owner(1_000);
    owner.register(Fixtures.worker("a", 1));
    snapshot(owner);
    int views = published.size();
    BookingAnswer first = book(owner, "r1");
    ReplicaDelta d2 = Replication.drainOne(owner, clock.millis());
    BookingAnswer second = book(owner, "r2");
    SelectionView view = replica.view();
    int a = view.indexOf(new Rank("a", 0));
    // read-your-writes: the relaying node writes the second Book's record first
    assertThat(view.cell(a).apply(second.loadUpdate().load())).isTrue();
    assertThat(replica.apply(d2, clock.millis())).isEqualTo(ModelReplica.Outcome.APPLIED);
    assertThat(view.cell(a).booked()).isEqualTo(second.selection().load());
    assertThat(view.cell(a).booked().inFlight()).isEqualTo(2);
    assertThat(first.epoch()).isEqualTo(1_000);
    assertThat(published).as("loads do not republish").hasSize(views);
    owner.release("r1", first.attempt());
    owner.release("r2", second.attempt());
    replica.apply(Replication.drainOne(owner, clock.millis()), clock.millis());
    assertThat(view.cell(a).booked().inFlight()).isZero();
    assertThat(replica.bookings()).isEmpty();
  }

  @Test
  void openedBookingsFeedTheOverlapSourceAndTheActivePrefixIndexAndLeavingWorkersAreDropped() {
    AdmissionState owner = owner(1_000);
    owner.register(Fixtures.worker("a", 1));
    owner.register(Fixtures.worker("b", 1));
    snapshot(owner);
    BookingAnswer answer = book(owner, "r1", 5, 6, 7);
    BookingAnswer gone = book(owner, "r2", 8);
    owner.release("r2", gone.attempt()); // opened and closed within one delta: never reaches the replica
    replica.apply(Replication.drainOne(owner, clock.millis()), clock.millis());
    assertThat(booked).containsExactly(answer.selection().rank() + " [5, 6, 7] @" + clock.millis());
    io.kvrouter.core.sequences.ActivePrefixIndex index =
        (io.kvrouter.core.sequences.ActivePrefixIndex) replica.view().activePrefix();
    assertThat(index.matchedDepth(answer.selection().rank(), new long[] {5, 6, 7, 9})).isEqualTo(3);
    String worker = answer.selection().rank().workerId();
    owner.deregister(worker);
    replica.apply(Replication.drainOne(owner, clock.millis()), clock.millis());
    assertThat(removedWorkers).containsExactly(worker);
    assertThat(index.matchedDepth(answer.selection().rank(), new long[] {5, 6, 7})).isZero();
    assertThat(replica.view().worker(worker)).isNull();
    assertThat(replica.bookings()).isEmpty();
    owner.deregister(worker.equals("a") ? "b" : "a");
    replica.apply(Replication.drainOne(owner, clock.millis()), clock.millis());
    assertThat(replica.isEmpty()).isTrue();
    assertThat(replica.recoveredState()).isNull();
    assertThat(replica.view().isEmpty()).isTrue();
  }

  @Test
  void applyViewTakesOnlyANewerViewAndTheDeltaCarryingItLater() {
    AdmissionState owner = owner(1_000);
    owner.register(Fixtures.worker("a", 1));
    snapshot(owner);
    owner.register(Fixtures.worker("b", 1));
    assertThat(replica.applyView(owner.viewState(), clock.millis())).isTrue();
    assertThat(replica.view().worker("b")).isNotNull();
    assertThat(replica.applyView(owner.viewState(), clock.millis())).isFalse();
    int views = published.size();
    assertThat(replica.apply(Replication.drainOne(owner, clock.millis()), clock.millis())).isEqualTo(
        ModelReplica.Outcome.APPLIED);
    assertThat(published).as("the delta's view is not newer").hasSize(views);
    assertThat(Copies.ofReplica(replica, List.of())).isEqualTo(Copies.ofOwner(owner, List.of()));
  }

  @Test
  void aReplicasSnapshotRecoversTheSameCopy() {
    AdmissionState owner = owner(1_000);
    owner.register(Fixtures.worker("a", 2));
    snapshot(owner);
    for (int i = 0; i < 30; i++) {
      book(owner, "r" + i, i, i + 1);
    }
    replica.apply(Replication.drainOne(owner, clock.millis()), clock.millis());
    ModelReplica other = new ModelReplica("m", 10_000, KvOverlapSource.NONE, view -> {});
    for (SnapshotChunk chunk : replica.snapshot(clock.millis(), 1024)) {
      other.apply(chunk, clock.millis());
    }
    assertThat(Copies.ofReplica(other, List.of())).isEqualTo(Copies.ofReplica(replica, List.of()));
    assertThat(other.seq()).isEqualTo(replica.seq());
    assertThat(new ModelReplica("m", 0, KvOverlapSource.NONE, v -> {}).snapshot(0, 1024)).isEmpty();
    List<LedgerSnapshot.Entry> live = replica.recoveredState().ledger().bookings();
    assertThat(live).hasSize(30);
    assertThat(replica.recoveredState().loads()).extracting(RankRecord::booked).extracting(RankLoad::inFlight)
        .containsExactlyInAnyOrder((int) live.stream().filter(e -> e.rank().dpRank() == 0).count(),
            (int) live.stream().filter(e -> e.rank().dpRank() == 1).count());
  }
}
