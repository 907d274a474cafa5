package io.kvrouter.core.indexer;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.model.Rank;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A worker is approximate until its first KV event and event-fed from then on. */
class ModelKvIndexTest {
  static final Rank A0 = new Rank("a", 0);
  static final Rank A1 = new Rank("a", 1);
  static final Rank B0 = new Rank("b", 0);
  static final long T0 = 5_000_000L;

  static long[] seq(int length) {
    long[] out = new long[length];
    for (int i = 0; i < length; i++) {
      out[i] = 0xABCDL * (i + 1);
    }
    return out;
  }

  static KvEvent stored(long[] tokensHashes, int from, int to, Long parent) {
    long[] slice = java.util.Arrays.copyOfRange(tokensHashes, from, to);
    long[] blocks = java.util.Arrays.stream(slice).map(h -> h ^ 0x77).toArray();
    return new KvEvent.Stored(StorageTier.DEVICE, parent, blocks, slice);
  }

  @Test
  void workerSwitchesToEventFedAtItsFirstEvent() {
    AtomicLong clock = new AtomicLong(T0);
    ModelKvIndex index = new ModelKvIndex(clock::get);
    ViewFixture fixture = new ViewFixture(index, ViewFixture.workers("a", 2, "b", 1));
    long[] prompt = seq(6);
    index.recordRouted(A0, prompt, T0);
    index.recordRouted(A1, prompt, T0);
    index.recordRouted(B0, java.util.Arrays.copyOf(prompt, 3), T0);
    assertThat(fixture.overlaps(prompt)).containsExactlyInAnyOrderEntriesOf(Map.of(
        A0, new TieredOverlap(6, 0, 0), A1, new TieredOverlap(6, 0, 0), B0, new TieredOverlap(3, 0, 0)));

    // Worker a publishes its first event (for rank 0 only): both of its ranks stop using guesses.
    assertThat(index.apply(A0, 1, stored(prompt, 0, 2, null))).isTrue();
    assertThat(index.eventFedWorkers().contains("a")).isTrue();
    assertThat(index.eventFedWorkers().contains("b")).isFalse();
    assertThat(fixture.overlaps(prompt)).containsExactlyInAnyOrderEntriesOf(Map.of(
        A0, new TieredOverlap(2, 0, 0), A1, TieredOverlap.NONE, B0, new TieredOverlap(3, 0, 0)));
    assertThat(index.approximate().entryCount()).isEqualTo(3);

    // Book decisions no longer feed an event-fed worker.
    index.recordRouted(A1, prompt, T0 + 1);
    assertThat(index.overlap(A1, prompt, T0 + 1)).isEqualTo(TieredOverlap.NONE);
    assertThat(index.approximate().entryCount()).isEqualTo(3);

    // Approximate workers still expire on the injected clock.
    clock.set(T0 + ApproximateKvIndex.DEFAULT_TTL_MILLIS);
    index.expire(clock.get());
    assertThat(fixture.overlaps(prompt).get(B0)).isEqualTo(TieredOverlap.NONE);
    assertThat(fixture.overlaps(prompt).get(A0)).isEqualTo(new TieredOverlap(2, 0, 0));
  }

  @Test
  void removeWorkerDropsBothIndexesAndTheEventFedStatus() {
    ModelKvIndex index = new ModelKvIndex(() -> T0);
    long[] prompt = seq(4);
    index.apply(A0, 1, stored(prompt, 0, 4, null));
    index.recordRouted(B0, prompt, T0);
    index.removeWorker("a");
    index.removeWorker("b");
    assertThat(index.eventFedWorkers().contains("a")).isFalse();
    assertThat(index.events().entryCount()).isZero();
    assertThat(index.approximate().entryCount()).isZero();
    // Back again without events: approximate once more.
    index.recordRouted(A0, prompt, T0);
    assertThat(index.overlap(A0, prompt, T0)).isEqualTo(new TieredOverlap(4, 0, 0));
  }

  @Test
  void gapsAreCountedThroughTheHolder() {
    ModelKvIndex index = new ModelKvIndex(() -> T0);
    long[] prompt = seq(4);
    index.apply(A0, 1, stored(prompt, 0, 2, null));
    index.apply(A0, 3, stored(prompt, 0, 1, null));
    assertThat(index.gapCount()).isEqualTo(1);
    assertThat(index.overlap(A0, prompt, T0)).isEqualTo(new TieredOverlap(1, 0, 0));
  }
}
