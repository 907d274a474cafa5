package io.kvrouter.core.replication;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.Fixtures;
import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.BookOutcome;
import io.kvrouter.core.membership.RankReport;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.Disaggregation;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SessionAffinity;
import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Replication;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Owner state → deltas → replica: under random sequences of every command, with deltas drained at random points, the
 * replica equals the owner (workers, policy, every rank's booked and reported load, live bookings, active prefixes,
 * queued Books: queueing is switched on and off at random; session bindings, made, refreshed, moved, expired and
 * evicted at random) after every delta; a delta applied twice changes nothing; a dropped delta makes the next one a GAP, and a snapshot
 * restores equality.
 */
class ReplicationConvergenceTest {
  private static final String MODEL = "m";
  private static final int RUNS = 150;
  private static final int STEPS = 250;
  private static final String[] POLICIES = {"kv", "round_robin", "random", "least_in_flight", "power_of_two"};

  /** The model's owner on {@code clock}: default settings, no KV overlap source, views published nowhere. */
  private static AdmissionState owner(ManualClock clock) {
    return new AdmissionState(MODEL, AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE, view -> {}, 0);
  }

  /** A replica of the model (10 s heartbeat timeout, no KV overlap source, views published nowhere). */
  private static ModelReplica replica() {
    return new ModelReplica(MODEL, 10_000, KvOverlapSource.NONE, view -> {});
  }

  /** A random owner with a fixed set of hash chains its Books use (and the comparison probes). */
  private static final class Run {
    final Random random;
    final ManualClock clock = new ManualClock(1_700_000_000_000L);
    final AdmissionState owner;
    final ModelReplica replica = replica();
    final List<long[]> chains = new ArrayList<>();
    final List<WorkerConfig> workers = new ArrayList<>();
    int applied;
    int pairs;
    boolean queuedOnce;

    Run(long seed) {
      random = new Random(seed);
      owner = new AdmissionState(MODEL, new AdmissionSettings(Duration.ofMillis(40), Duration.ofSeconds(10)), clock,
          KvOverlapSource.NONE, view -> {}, 0);
      for (int i = 0; i < 4; i++) {
        workers.add(Fixtures.worker("w" + i, 1 + i % 2));
      }
      // prefill and decode workers: a Book makes a pair while both roles are registered
      workers.add(new WorkerConfig("p0", 0, 1, 8192, 1000, 16, "http://p0", "local", WorkerRole.PREFILL));
      workers.add(new WorkerConfig("d0", 0, 2, 8192, 1000, 16, "http://d0", "local", WorkerRole.DECODE));
      workers.add(new WorkerConfig("d1", 0, 1, 8192, 1000, 16, "http://d1", "local", WorkerRole.DECODE)
          .withLoraAdapters(Set.of("sql")));
      for (int c = 0; c < 4; c++) {
        long[] chain = new long[1 + random.nextInt(6)];
        for (int k = 0; k < chain.length; k++) {
          chain[k] = c * 1000L + k; // chains share no hash, so a prefix of one is never part of another
        }
        chains.add(chain);
      }
    }

    void step() {
      int op = random.nextInt(100);
      try {
        if (op < 8) {
          owner.register(workers.get(random.nextInt(workers.size())));
        } else if (op < 12) {
          owner.deregister(workers.get(random.nextInt(workers.size())).workerId());
        } else if (op < 45) {
          long[] chain = chains.get(random.nextInt(chains.size()));
          long[] hashes = java.util.Arrays.copyOf(chain, 1 + random.nextInt(chain.length));
          long nonce = random.nextLong();
          BookOutcome outcome = owner.book(new SelectionRequest(MODEL, "r" + random.nextInt(12), hashes,
              16 * hashes.length + random.nextInt(16), 0, null, null, null, null, random.nextInt(3), null, null, null,
              random.nextInt(2), random.nextBoolean() ? "" : "gold").withDisaggregation(
                  Disaggregation.values()[random.nextInt(Disaggregation.values().length)])
              .withLoraName(random.nextInt(4) == 0 ? "sql" : "").withSession(session()), nonce,
              random.nextInt(3) == 0 ? clock.millis() + random.nextInt(50) : 0, "caller-" + nonce);
          if (outcome instanceof BookOutcome.Queued) {
            queuedOnce = true;
          }
          if (outcome instanceof BookOutcome.Booked booked && booked.answer().selection().disaggregated()) {
            pairs++;
          }
          owner.drainCompletions();
        } else if (op < 60) {
          LedgerSnapshot.Entry live = anyLive();
          if (live != null) {
            owner.release(live.requestId(), random.nextInt(5) == 0 ? live.attempt() + 1 : live.attempt());
          }
        } else if (op < 68) {
          LedgerSnapshot.Entry live = anyLive();
          if (live != null) {
            owner.markPrefillDone(live.requestId(), live.attempt());
          }
        } else if (op < 76) {
          LedgerSnapshot.Entry live = anyLive();
          if (live != null) {
            owner.renew(live.requestId(), live.attempt());
          }
        } else if (op < 84) {
          clock.advance(Duration.ofMillis(random.nextInt(25)));
          owner.expire();
        } else if (op < 88) {
          String seed = random.nextBoolean() ? "" : Long.toString(random.nextInt(100));
          String queueing = random.nextBoolean() ? "" : Integer.toString(random.nextInt(64));
          owner.setPolicy(POLICIES[random.nextInt(POLICIES.length)], Map.of("seed", seed,
              "queue_prefill_tokens_threshold", queueing, "class.gold",
              random.nextBoolean() ? "" : "quantum=" + (1 + random.nextInt(100)),
              "conditional_disagg_isl_threshold", random.nextBoolean() ? "" : Integer.toString(random.nextInt(64)),
              "session_ttl_ms", random.nextInt(4) == 0 ? "0" : Integer.toString(20 + random.nextInt(200)),
              "session_max_bindings", Integer.toString(1 + random.nextInt(5)),
              "session_mode", random.nextBoolean() ? "soft" : "hard"));
          owner.drainCompletions();
        } else if (op < 92) {
          List<QueuedBook> waiting = owner.queuedBooks();
          if (!waiting.isEmpty()) {
            QueuedBook book = waiting.get(random.nextInt(waiting.size()));
            assertThat(owner.cancelBook(book.requestId(), book.nonce())).isTrue();
          }
        } else {
          WorkerConfig worker = workers.get(random.nextInt(workers.size()));
          owner.reportLoad(worker.workerId(), List.of(new RankReport(random.nextInt(worker.dpSize()),
              random.nextInt(100), random.nextInt(1000), random.nextInt(4))));
        }
      } catch (RoutingException e) {
        // unknown worker, no endpoint: the command changed nothing
      }
    }

    /** One of a few sessions in a random mode, or none. */
    SessionAffinity session() {
      if (random.nextInt(4) == 0) {
        return null;
      }
      SessionMode[] modes = SessionMode.values();
      return SessionAffinity.of("s" + random.nextInt(7), modes[random.nextInt(modes.length)]);
    }

    LedgerSnapshot.Entry anyLive() {
      List<LedgerSnapshot.Entry> live = owner.ledgerSnapshot().bookings();
      return live.isEmpty() ? null : live.get(random.nextInt(live.size()));
    }

    /** Drains the owner's next delta and applies it (twice: the second time changes nothing). */
    void replicate() {
      ReplicaDelta delta = Replication.drainOne(owner, clock.millis());
      if (delta == null) {
        return;
      }
      assertThat(replica.apply(delta, clock.millis())).isEqualTo(ModelReplica.Outcome.APPLIED);
      Map<String, Object> once = Copies.ofReplica(replica, chains);
      assertThat(once).isEqualTo(Copies.expected(owner, chains));
      assertThat(replica.apply(delta, clock.millis())).isEqualTo(ModelReplica.Outcome.STALE);
      assertThat(Copies.ofReplica(replica, chains)).isEqualTo(once);
      applied++;
    }

    void snapshotTo(int maxChunkBytes) {
      List<SnapshotChunk> chunks = new ArrayList<>(owner.replicaSnapshot(clock.millis(), maxChunkBytes));
      java.util.Collections.shuffle(chunks, random);
      for (int i = 0; i < chunks.size(); i++) {
        assertThat(replica.apply(chunks.get(i), clock.millis())).isEqualTo(
            i == chunks.size() - 1 ? ModelReplica.Outcome.APPLIED : ModelReplica.Outcome.PARTIAL);
      }
    }
  }

  @Test
  void replicaEqualsOwnerAfterEveryDelta() {
    int deltas = 0;
    int queuing = 0;
    int pairs = 0;
    int sessions = 0;
    for (long seed = 0; seed < RUNS; seed++) {
      Run run = new Run(seed);
      run.snapshotTo(4096); // a new peer starts from a full copy
      for (int step = 0; step < STEPS; step++) {
        run.step();
        if (run.random.nextInt(4) == 0) {
          run.replicate();
        }
      }
      run.replicate();
      assertThat(Copies.ofReplica(run.replica, run.chains)).as("seed %d", seed)
          .isEqualTo(Copies.expected(run.owner, run.chains));
      deltas += run.applied;
      queuing += run.queuedOnce ? 1 : 0;
      pairs += run.pairs;
      sessions += run.owner.sessionBindings().isEmpty() ? 0 : 1;
    }
    assertThat(deltas).as("deltas applied over all runs").isGreaterThan(RUNS * 20);
    assertThat(pairs).as("prefill/decode pairs booked over all runs").isGreaterThan(RUNS * 5);
    assertThat(queuing).as("runs in which some Book waited").isGreaterThan(RUNS / 4);
    assertThat(sessions).as("runs that ended holding session bindings").isGreaterThan(RUNS / 4);
  }

  @Test
  void aDroppedDeltaIsAGapAndASnapshotRestoresEquality() {
    int gaps = 0;
    for (long seed = 0; seed < RUNS; seed++) {
      Run run = new Run(seed);
      run.snapshotTo(4096);
      for (int step = 0; step < STEPS; step++) {
        run.step();
        if (run.random.nextInt(4) != 0) {
          continue;
        }
        if (run.random.nextInt(5) != 0) {
          run.replicate();
          continue;
        }
        if (Replication.drainOne(run.owner, run.clock.millis()) == null) {
          continue; // nothing to lose
        }
        for (int more = 0; more < 5; more++) {
          run.step();
        }
        ReplicaDelta next = Replication.drainOne(run.owner, run.clock.millis());
        if (next == null) {
          run.owner.setPolicy("", Map.of()); // make one: every command after the lost delta must still GAP
          next = Replication.drainOne(run.owner, run.clock.millis());
        }
        assertThat(run.replica.apply(next, run.clock.millis())).isEqualTo(ModelReplica.Outcome.GAP);
        assertThat(run.replica.staleness(run.clock.millis()).awaitingSnapshot()).isTrue();
        assertThat(run.replica.staleness(run.clock.millis()).seqLag()).isEqualTo(2);
        gaps++;
        run.snapshotTo(1500 + run.random.nextInt(3000)); // every booking's hashes fit: none is cut
        assertThat(Copies.ofReplica(run.replica, run.chains)).as("seed %d after the snapshot", seed)
            .isEqualTo(Copies.expected(run.owner, run.chains));
        Staleness staleness = run.replica.staleness(run.clock.millis());
        assertThat(staleness.awaitingSnapshot()).isFalse();
        assertThat(staleness.seqLag()).isZero();
        assertThat(staleness.seq()).isEqualTo(next.seq());
      }
      run.replicate();
      assertThat(Copies.ofReplica(run.replica, run.chains)).isEqualTo(Copies.expected(run.owner, run.chains));
    }
    assertThat(gaps).isGreaterThan(RUNS);
  }

  @Test
  void theFirstDeltaOfAnEpochIsSeqOneAndNothingChangedDrainsNull() {
    ManualClock clock = new ManualClock(5_000);
    AdmissionState owner = new AdmissionState(MODEL, AdmissionSettings.DEFAULTS, clock, KvOverlapSource.NONE,
        view -> {}, 0, 42);
    assertThat(owner.epoch()).isEqualTo(42);
    owner.register(Fixtures.worker("a", 1));
    ReplicaDelta first = Replication.drainOne(owner, clock.millis());
    assertThat(first.epoch()).isEqualTo(42);
    assertThat(first.seq()).isEqualTo(1);
    assertThat(first.view().workers()).extracting(WorkerConfig::workerId).containsExactly("a");
    assertThat(Replication.drainOne(owner, clock.millis())).isNull();
    owner.reportLoad("a", List.of(new RankReport(0, 1, 2, 3)));
    ReplicaDelta second = Replication.drainOne(owner, clock.millis());
    assertThat(second.seq()).isEqualTo(2);
    assertThat(second.view()).as("membership did not change").isNull();
    assertThat(second.loads()).singleElement().satisfies(load -> assertThat(load.reported().prefillTokens())
        .isEqualTo(2));
    assertThat(Set.of(owner.replicaSnapshot(clock.millis(), 4096).get(0).seq())).containsExactly(2L);
  }

  /**
   * A burst in one interval (600 Books with long hash chains, then 300 of them released and 100 marked prefill-done)
   * drained under an 8 KiB budget is cut into consecutive deltas, each estimated within the budget, which applied in
   * order give the replica the owner's state; one booking whose hashes alone pass the budget keeps a leading part.
   */
  @Test
  void aBurstDrainedUnderABudgetIsCutIntoConsecutiveDeltasThatYieldTheOwnersState() {
    ManualClock clock = new ManualClock(1_700_000_000_000L);
    AdmissionState owner = owner(clock);
    ModelReplica replica = replica();
    List<long[]> chains = new ArrayList<>();
    for (int c = 0; c < 4; c++) {
      long[] chain = new long[64];
      for (int k = 0; k < chain.length; k++) {
        chain[k] = c * 1000L + k;
      }
      chains.add(chain);
    }
    for (int i = 0; i < 4; i++) {
      owner.register(Fixtures.worker("w" + i, 2));
    }
    owner.drainReplicaDeltas(clock.millis(), Integer.MAX_VALUE);
    for (SnapshotChunk chunk : owner.replicaSnapshot(clock.millis(), Integer.MAX_VALUE)) {
      assertThat(replica.apply(chunk, clock.millis())).isEqualTo(ModelReplica.Outcome.APPLIED);
    }
    long before = replica.seq();
    List<LedgerSnapshot.Entry> booked = new ArrayList<>();
    for (int i = 0; i < 600; i++) {
      long[] hashes = i == 0 ? new long[2_000] : chains.get(i % chains.size());
      SelectionRequest request = new SelectionRequest(MODEL, "r" + i, hashes, hashes.length * 16, 0, null, null,
          null, 0, null, null, null);
      assertThat(owner.book(request, i, 0)).isInstanceOf(BookOutcome.Booked.class);
    }
    for (LedgerSnapshot.Entry entry : owner.ledgerSnapshot().bookings()) {
      booked.add(entry);
    }
    for (int i = 0; i < 300; i++) {
      assertThat(owner.release(booked.get(i).requestId(), booked.get(i).attempt()).applied()).isTrue();
    }
    for (int i = 300; i < 400; i++) {
      owner.markPrefillDone(booked.get(i).requestId(), booked.get(i).attempt());
    }
    int budget = 8 * 1024;
    List<ReplicaDelta> deltas = owner.drainReplicaDeltas(clock.millis(), budget);
    assertThat(deltas).hasSizeGreaterThan(5);
    for (int i = 0; i < deltas.size(); i++) {
      ReplicaDelta delta = deltas.get(i);
      assertThat(delta.seq()).isEqualTo(before + 1 + i);
      assertThat(SnapshotChunks.estimatedBytes(delta)).isLessThanOrEqualTo(budget);
      assertThat(replica.apply(delta, clock.millis())).isEqualTo(ModelReplica.Outcome.APPLIED);
    }
    assertThat(Copies.ofReplica(replica, chains)).isEqualTo(Copies.expected(owner, chains));
    assertThat(owner.drainReplicaDeltas(clock.millis(), budget)).isEmpty();
  }

  /**
   * An owner with no peer listed builds no delta: its flush forgets the changes (the seq advancing as a drain's
   * would), a peer listed later gets a snapshot of everything, and deltas once it is in step.
   */
  @Test
  void anOwnerWithNoPeerSendsNothingAndAPeerListedLaterConvergesFromASnapshot() {
    ManualClock clock = new ManualClock(1_700_000_000_000L);
    AdmissionState owner = owner(clock);
    ModelReplica replica = replica();
    ReplicationSender<String> sender = new ReplicationSender<>(300, 128 * 1024);
    List<Object> sent = new ArrayList<>();
    List<ModelReplica.Outcome> outcomes = new ArrayList<>();
    ReplicationSender.Transport<String> toReplica = new ReplicationSender.Transport<>() {
      @Override
      public void delta(String peer, ReplicaDelta delta) {
        sent.add(delta);
        outcomes.add(replica.apply(delta, clock.millis()));
      }

      @Override
      public void chunk(String peer, SnapshotChunk chunk) {
        sent.add(chunk);
        outcomes.add(replica.apply(chunk, clock.millis()));
      }
    };
    List<long[]> chains = List.of(new long[] {1, 2, 3}, new long[] {10, 11});
    for (int i = 0; i < 4; i++) {
      owner.register(Fixtures.worker("w" + i, 2));
    }
    for (int i = 0; i < 6; i++) {
      long[] hashes = chains.get(i % 2);
      owner.book(new SelectionRequest(MODEL, "r" + i, hashes, hashes.length * 16, 0, null, null, null, 0, null, null,
          null), i, 0);
    }
    long seq = owner.replicationSeq();

    sender.flush(owner, Set.of(), clock.millis(), toReplica);
    assertThat(sent).isEmpty();
    assertThat(owner.replicationSeq()).isEqualTo(seq + 1);
    assertThat(owner.drainReplicaDeltas(clock.millis(), Integer.MAX_VALUE)).as("the changes were forgotten").isEmpty();

    LedgerSnapshot.Entry first = owner.ledgerSnapshot().bookings().get(0);
    assertThat(owner.release(first.requestId(), first.attempt()).applied()).isTrue();
    sender.flush(owner, Set.of("peer"), clock.millis(), toReplica);
    assertThat(sent).isNotEmpty().allSatisfy(message -> assertThat(message).isInstanceOf(SnapshotChunk.class));
    assertThat(outcomes).containsOnly(ModelReplica.Outcome.APPLIED);
    assertThat(Copies.ofReplica(replica, chains)).isEqualTo(Copies.expected(owner, chains));

    sent.clear();
    owner.book(new SelectionRequest(MODEL, "r-late", chains.get(0), 48, 0, null, null, null, 0, null, null, null), 99,
        0);
    sender.acked("peer", owner.epoch(), owner.replicationSeq(), owner.epoch(), clock.millis());
    sender.flush(owner, Set.of("peer"), clock.millis(), toReplica);
    assertThat(sent).singleElement().isInstanceOf(ReplicaDelta.class);
    assertThat(outcomes).containsOnly(ModelReplica.Outcome.APPLIED);
    assertThat(Copies.ofReplica(replica, chains)).isEqualTo(Copies.expected(owner, chains));
  }
}
