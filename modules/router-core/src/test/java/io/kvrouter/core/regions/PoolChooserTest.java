package io.kvrouter.core.regions;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class PoolChooserTest {
  private static final long NOW = 10_000;
  private static final long STALE_AFTER = 2_000;

  private static PoolSummary pool(String region, long capacity, long heldBlocks, long heardAt) {
    return new PoolSummary("m", region, 1, 1, (int) heldBlocks, 0, capacity,
        PoolSummary.normalised(heldBlocks, capacity), 16, List.of(region + ":50051"), "",
        1, 1, heardAt);
  }

  @Test
  void prefersTheLowerLoadRelativeToCapacity() {
    // eu holds more blocks but has four times the capacity: it is the less loaded pool
    PoolSummary eu = pool("eu", 4000, 400, NOW);
    PoolSummary us = pool("us", 1000, 200, NOW);
    assertThat(PoolChooser.choose(List.of(us, eu), NOW, STALE_AFTER)).isSameAs(eu);
  }

  @Test
  void stalePoolsRankAfterEveryFreshOne() {
    PoolSummary idleButStale = pool("eu", 1000, 0, NOW - STALE_AFTER - 1);
    PoolSummary busyFresh = pool("us", 1000, 900, NOW - STALE_AFTER);
    assertThat(PoolChooser.choose(List.of(idleButStale, busyFresh), NOW, STALE_AFTER)).isSameAs(busyFresh);
    // with nothing fresh, the least loaded stale pool is still an answer
    PoolSummary busyStale = pool("us", 1000, 900, 0);
    assertThat(PoolChooser.choose(List.of(busyStale, idleButStale), NOW, STALE_AFTER)).isSameAs(idleButStale);
  }

  @Test
  void tiesGoToTheFirstRegionByNameWhateverTheOrderGiven() {
    PoolSummary a = pool("ap", 1000, 100, NOW);
    PoolSummary b = pool("eu", 2000, 200, NOW);
    PoolSummary c = pool("us", 500, 50, NOW);
    for (List<PoolSummary> pools : List.of(List.of(a, b, c), List.of(c, b, a), List.of(b, c, a))) {
      assertThat(PoolChooser.choose(pools, NOW, STALE_AFTER)).isSameAs(a);
    }
  }

  @Test
  void poolsWithoutWorkersAndMissingSummariesAreNoCandidates() {
    assertThat(PoolChooser.choose(List.of(), NOW, STALE_AFTER)).isNull();
    PoolSummary empty = new PoolSummary("m", "eu", 0, 0, 0, 0, 0, PoolSummary.normalised(0, 0), 16, List.of(),
        "", 1, 1, NOW);
    assertThat(PoolChooser.choose(List.of(empty), NOW, STALE_AFTER)).isNull();
    PoolSummary us = pool("us", 1000, 999, NOW);
    assertThat(PoolChooser.choose(List.of(empty, us), NOW, STALE_AFTER)).isSameAs(us);
  }

  @Test
  void aRelayedBookingRaisesTheLoadByItsBlocks() {
    PoolSummary us = pool("us", 1000, 100, NOW);
    PoolSummary booked = us.plusBooking(33); // 3 blocks of 16
    assertThat(booked.inFlight()).isEqualTo(us.inFlight() + 1);
    assertThat(booked.load()).isCloseTo(0.103, org.assertj.core.data.Offset.offset(1e-9));
    // a burst of relayed Books moves the choice to the other pool before its next summary
    PoolSummary eu = pool("eu", 1000, 110, NOW);
    assertThat(PoolChooser.choose(List.of(us, eu), NOW, STALE_AFTER)).isSameAs(us);
    PoolSummary afterBurst = us.plusBooking(160).plusBooking(160);
    assertThat(PoolChooser.choose(List.of(afterBurst, eu), NOW, STALE_AFTER)).isSameAs(eu);
  }
}
