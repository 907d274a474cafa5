package io.kvrouter.core.explain;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class DecisionLogTest {
  private final ManualClock clock = new ManualClock(1_000_000);
  private final SelectionView view = view();

  private SelectionView view() {
    AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
    state.register(worker("a"));
    state.register(worker("b"));
    state.setPolicy("least_in_flight", Map.of());
    return state.view();
  }

  /** A Select recorded into {@code log} as the inline path records it. */
  private void decide(DecisionLog log, String requestId, long unixMs) {
    Candidates scratch = Candidates.forCurrentThread();
    SelectionRequest request = Requests.of("m", requestId, 16);
    Selector.select(view, request, scratch, unixMs);
    log.record(DecisionKind.SELECT, view, request, scratch, unixMs);
  }

  private static List<String> ids(List<Decision> decisions) {
    return decisions.stream().map(d -> d.explain("n").requestId()).toList();
  }

  @Test
  void keepsTheLastNNewestFirst() {
    DecisionLog log = new DecisionLog(3, 1);
    assertThat(log.newest(0)).isEmpty();
    for (int i = 1; i <= 5; i++) {
      decide(log, "r" + i, 1000 + i / 2); // several in one millisecond keep their order
    }
    assertThat(ids(log.newest(0))).containsExactly("r5", "r4", "r3");
    assertThat(ids(log.newest(2))).containsExactly("r5", "r4");
    assertThat(ids(log.newest(10))).containsExactly("r5", "r4", "r3");
  }

  @Test
  void mergesStripesNewestFirstAndKeepsAtMostRecent() {
    DecisionLog log = new DecisionLog(4, 4);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      int thread = t;
      threads.add(new Thread(() -> decide(log, "t" + thread, 2000 + thread)));
    }
    threads.forEach(Thread::start);
    threads.forEach(DecisionLogTest::join);
    decide(log, "main", 3000);
    List<Decision> newest = log.newest(0);
    assertThat(newest).extracting(Decision::nanos).isSortedAccordingTo((x, y) -> Long.compare(y, x));
    assertThat(ids(newest).get(0)).isEqualTo("main");
    assertThat(newest).hasSizeBetween(2, 4); // threads whose ids collide share a stripe
  }

  @Test
  void concurrentRecordingLosesNoStructure() throws Exception {
    DecisionLog log = new DecisionLog(64);
    int threads = 4;
    int perThread = 2_000;
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> writers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      Thread writer = new Thread(() -> {
        await(start);
        for (int i = 0; i < perThread; i++) {
          decide(log, "t" + thread + "-" + i, 5000 + i);
        }
      });
      writers.add(writer);
      writer.start();
    }
    start.countDown();
    // read while writing: every decision read is whole
    for (int reads = 0; reads < 200; reads++) {
      log.newest(0).forEach(DecisionLogTest::assertWhole);
    }
    writers.forEach(DecisionLogTest::join);
    List<Decision> newest = log.newest(0);
    assertThat(newest).hasSize(64);
    newest.forEach(DecisionLogTest::assertWhole);
    Set<String> ids = new HashSet<>(ids(newest));
    assertThat(ids).hasSize(64);
    assertThat(newest).extracting(Decision::nanos).isSortedAccordingTo((x, y) -> Long.compare(y, x));
    // each stripe ends with its threads' last decisions
    assertThat(newest.get(0).unixMs()).isGreaterThan(5000 + perThread / 2);
  }

  private static void assertWhole(Decision decision) {
    Explanation e = decision.explain("n");
    assertThat(e.candidates()).hasSize(2);
    assertThat(e.candidates()).filteredOn(Explanation.CandidateExplanation::picked).hasSize(1);
    // fields written together are read together: the request id names the millisecond it was recorded at
    assertThat(e.requestId()).startsWith("t");
    assertThat(e.unixMs()).isEqualTo(5000 + Long.parseLong(e.requestId().substring(e.requestId().indexOf('-') + 1)));
  }

  @Test
  void recentIsBounded() {
    assertThatThrownBy(() -> new DecisionLog(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new DecisionLog(DecisionLog.MAX_RECENT + 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(new DecisionLog(DecisionLog.MAX_RECENT).recent()).isEqualTo(DecisionLog.MAX_RECENT);
  }

  private static void join(Thread thread) {
    try {
      thread.join(30_000);
      assertThat(thread.isAlive()).isFalse();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  private static void await(CountDownLatch latch) {
    try {
      assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }
}
