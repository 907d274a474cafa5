package io.kvrouter.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/** How {@code bench cluster} turns polled owner and observer values into propagation samples. */
class PropagationTrackTest {
  private final ClusterBench.Propagation.Track track = new ClusterBench.Propagation.Track();
  private final Histogram samples = new Histogram(1, 1_000_000_000L, 3);

  @Test
  void anObservedValueIsTimedFromTheFirstOwnerPollThatShowedItOrMore() {
    track.baseline(10, 10);
    track.owner(14, 1_000);
    track.owner(20, 2_000);
    track.observer(14, 2_500, samples); // the owner showed 14 at 1,000
    track.observer(17, 2_600, samples); // the owner went from 14 to 20 between polls: first ≥ 17 is 20 at 2,000
    track.observer(20, 2_700, samples); // the owner showed 20 at 2,000

    assertThat(samples.getTotalCount()).isEqualTo(3);
    assertThat(samples.getMaxValue()).isBetween(1_499L, 1_501L);
    assertThat(samples.getMinValue()).isBetween(599L, 601L);
    assertThat(track.missing()).isZero();
  }

  @Test
  void ownerChangesTheObserverNeverReachedAreMissingAndEarlierValuesAreNotMeasured() {
    track.baseline(100, 40); // the observer lagged before the measurement: only later changes count
    track.observer(90, 50, samples);
    track.owner(101, 1_000);
    track.owner(105, 2_000);
    track.owner(109, 3_000);
    track.observer(101, 3_100, samples);

    assertThat(samples.getTotalCount()).isEqualTo(1);
    assertThat(track.missing()).isEqualTo(2);
  }
}
