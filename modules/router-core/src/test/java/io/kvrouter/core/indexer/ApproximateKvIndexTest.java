package io.kvrouter.core.indexer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.model.Rank;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** TTL, refresh, expiry and size pruning of the approximate index, on an injected clock (nothing sleeps). */
class ApproximateKvIndexTest {
  static final Rank A0 = new Rank("a", 0);
  static final Rank A1 = new Rank("a", 1);
  static final Rank B0 = new Rank("b", 0);
  static final long T0 = 1_700_000_000_000L;

  static long[] seq(int prompt, int length) {
    long[] out = new long[length];
    for (int i = 0; i < length; i++) {
      out[i] = prompt * 1_000_003L + i * 31L + 1;
    }
    return out;
  }

  @Test
  void routedBlocksMatchUntilTheirTtlPasses() {
    ApproximateKvIndex index = new ApproximateKvIndex(120_000, 1000, 0.8, () -> T0);
    index.recordRouted(A0, seq(1, 4), T0);
    assertThat(index.overlap(A0, seq(1, 6), T0)).isEqualTo(4);
    assertThat(index.overlap(A0, seq(1, 2), T0 + 119_999)).isEqualTo(2);
    assertThat(index.overlap(A1, seq(1, 4), T0)).isZero();
    // Expired entries are ignored by lookups before expire() runs...
    assertThat(index.overlap(A0, seq(1, 4), T0 + 120_000)).isZero();
    assertThat(index.entryCount()).isEqualTo(4);
    // ...and dropped when it does.
    index.expire(T0 + 119_999);
    assertThat(index.entryCount()).isEqualTo(4);
    index.expire(T0 + 120_000);
    assertThat(index.entryCount()).isZero();
    assertThat(index.blockCount()).isZero();
  }

  @Test
  void routingAgainRefreshesTheSharedPrefixOnly() {
    ApproximateKvIndex index = new ApproximateKvIndex(100_000, 1000, 0.8, () -> T0);
    index.recordRouted(A0, seq(1, 6), T0);
    index.recordRouted(A0, seq(1, 3), T0 + 50_000);
    long now = T0 + 120_000;
    assertThat(index.overlap(A0, seq(1, 6), now)).isEqualTo(3);
    index.expire(now);
    assertThat(index.entryCount()).isEqualTo(3);
    assertThat(index.overlap(A0, seq(1, 6), now)).isEqualTo(3);
    index.expire(T0 + 150_000);
    assertThat(index.entryCount()).isZero();
  }

  @Test
  void sizeBoundPrunesOldestDownToTheTargetRatio() {
    ApproximateKvIndex index = new ApproximateKvIndex(120_000, 10, 0.8, () -> T0);
    index.recordRouted(A0, seq(1, 6), T0);
    index.recordRouted(B0, seq(2, 4), T0 + 1);
    assertThat(index.entryCount()).isEqualTo(10);
    index.recordRouted(A1, seq(3, 4), T0 + 2); // 14 > 10: prune to 8, oldest (prompt 1) first, deepest first
    assertThat(index.entryCount()).isEqualTo(8);
    assertThat(index.overlap(A0, seq(1, 6), T0 + 3)).isZero();
    assertThat(index.overlap(B0, seq(2, 4), T0 + 3)).isEqualTo(4);
    assertThat(index.overlap(A1, seq(3, 4), T0 + 3)).isEqualTo(4);
  }

  @Test
  void pruningCutsAPromptFromItsTailKeepingItsPrefix() {
    ApproximateKvIndex index = new ApproximateKvIndex(120_000, 10, 0.8, () -> T0);
    index.recordRouted(A0, seq(1, 6), T0);
    index.recordRouted(A0, seq(2, 6), T0 + 1); // 12 > 10: 4 of prompt 1's deepest blocks go
    assertThat(index.entryCount()).isEqualTo(8);
    assertThat(index.overlap(A0, seq(1, 6), T0 + 2)).isEqualTo(2);
    assertThat(index.overlap(A0, seq(2, 6), T0 + 2)).isEqualTo(6);
  }

  @Test
  void refreshedEntriesSurvivePruningOfOlderOnes() {
    ApproximateKvIndex index = new ApproximateKvIndex(120_000, 10, 0.5, () -> T0);
    index.recordRouted(A0, seq(1, 4), T0);
    index.recordRouted(A0, seq(2, 4), T0 + 1);
    index.recordRouted(A0, seq(1, 4), T0 + 2); // refresh: prompt 2 is now the oldest
    index.recordRouted(A0, seq(3, 3), T0 + 3); // 11 > 10: prune to 5
    assertThat(index.entryCount()).isEqualTo(5);
    assertThat(index.overlap(A0, seq(2, 4), T0 + 4)).isZero();
    assertThat(index.overlap(A0, seq(3, 3), T0 + 4)).isEqualTo(3);
    assertThat(index.overlap(A0, seq(1, 4), T0 + 4)).isEqualTo(2);
  }

  @Test
  void removeWorkerDropsItsEntries() {
    ApproximateKvIndex index = new ApproximateKvIndex(120_000, 1000, 0.8, () -> T0);
    index.recordRouted(A0, seq(1, 3), T0);
    index.recordRouted(A1, seq(1, 3), T0);
    index.recordRouted(B0, seq(1, 2), T0);
    index.removeWorker("a");
    assertThat(index.entryCount()).isEqualTo(2);
    assertThat(index.overlap(A0, seq(1, 3), T0)).isZero();
    assertThat(index.overlap(B0, seq(1, 3), T0)).isEqualTo(2);
    index.expire(T0 + 200_000);
    assertThat(index.entryCount()).isZero();
    index.recordRouted(A0, seq(1, 3), T0 + 200_000);
    assertThat(index.overlap(A0, seq(1, 3), T0 + 200_000)).isEqualTo(3);
  }

  @Test
  void selectionPathReadsTheInjectedClock() {
    AtomicLong clock = new AtomicLong(T0);
    ApproximateKvIndex index = new ApproximateKvIndex(120_000, 1000, 0.8, clock::get);
    ViewFixture fixture = new ViewFixture(index, ViewFixture.workers("a", 2, "b", 1));
    index.recordRouted(A1, seq(1, 5), T0);
    index.recordRouted(B0, seq(1, 2), T0 + 60_000);
    clock.set(T0 + 60_000);
    assertThat(fixture.overlaps(seq(1, 5))).containsExactlyInAnyOrderEntriesOf(Map.of(
        A0, TieredOverlap.NONE, A1, new TieredOverlap(5, 0, 0), B0, new TieredOverlap(2, 0, 0)));
    clock.set(T0 + 150_000);
    assertThat(fixture.overlaps(seq(1, 5))).containsExactlyInAnyOrderEntriesOf(Map.of(
        A0, TieredOverlap.NONE, A1, TieredOverlap.NONE, B0, new TieredOverlap(2, 0, 0)));
  }

  @Test
  void rejectsNonsenseSettings() {
    assertThatThrownBy(() -> new ApproximateKvIndex(0, 10, 0.8, () -> 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new ApproximateKvIndex(10, 0, 0.8, () -> 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new ApproximateKvIndex(10, 10, 1.5, () -> 0))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
