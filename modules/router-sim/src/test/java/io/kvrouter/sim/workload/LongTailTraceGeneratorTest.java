package io.kvrouter.sim.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The long-tail trace: valid Mooncake entries, thinly spread shared prefixes, long one-offs, bursts. */
class LongTailTraceGeneratorTest {
  private static final List<MooncakeTrace.Entry> TRACE = new LongTailTraceGenerator(5).generate(3000, 2.0);

  @Test
  void entriesAreValidMooncakeEntriesInTimeOrderThatReadBackTheSame() throws IOException {
    assertThat(TRACE).hasSize(3000);
    for (int i = 1; i < TRACE.size(); i++) {
      assertThat(TRACE.get(i).timestampMillis()).isGreaterThanOrEqualTo(TRACE.get(i - 1).timestampMillis());
    }
    StringWriter out = new StringWriter();
    MooncakeTrace.write(TRACE, out);
    // read() checks every entry: one hash id per 512 prompt tokens, non-negative fields
    List<MooncakeTrace.Entry> back = MooncakeTrace.read(new BufferedReader(new StringReader(out.toString())), "lt");
    assertThat(back).hasSize(TRACE.size());
    for (int i = 0; i < back.size(); i++) {
      assertThat(back.get(i).hashIds()).containsExactly(TRACE.get(i).hashIds());
    }
  }

  @Test
  void theSameSeedGivesTheSameTraceAndAnotherSeedAnother() {
    List<MooncakeTrace.Entry> again = new LongTailTraceGenerator(5).generate(3000, 2.0);
    List<MooncakeTrace.Entry> other = new LongTailTraceGenerator(6).generate(3000, 2.0);
    for (int i = 0; i < TRACE.size(); i++) {
      assertThat(again.get(i).hashIds()).containsExactly(TRACE.get(i).hashIds());
      assertThat(again.get(i).timestampMillis()).isEqualTo(TRACE.get(i).timestampMillis());
    }
    assertThat(other.get(0).timestampMillis()).isNotEqualTo(TRACE.get(0).timestampMillis());
  }

  /**
   * Shared prefixes are many and thin: hundreds of distinct first blocks are shared by two or more requests, the
   * most shared one by a few percent of them (the sample's top document takes far more), and a quarter of the
   * requests are long prompts of 8 blocks or more whose first block nobody else uses.
   */
  @Test
  void sharedPrefixesAreManyAndThinAndLongOneOffsAreCommon() {
    Map<Long, Integer> firstBlockUses = new HashMap<>();
    for (MooncakeTrace.Entry e : TRACE) {
      firstBlockUses.merge(e.hashIds()[0], 1, Integer::sum);
    }
    long shared = firstBlockUses.values().stream().filter(n -> n >= 2).count();
    int top = firstBlockUses.values().stream().mapToInt(Integer::intValue).max().orElseThrow();
    assertThat(shared).isGreaterThan(200);
    assertThat(top).isLessThan(TRACE.size() / 10);
    long longOneOffs = TRACE.stream().filter(e -> e.hashIds().length >= 8 && firstBlockUses.get(e.hashIds()[0]) == 1)
        .count();
    assertThat(longOneOffs).isBetween(TRACE.size() / 6L, TRACE.size() / 3L);

    Map<Long, Integer> sampleUses = new HashMap<>();
    List<MooncakeTrace.Entry> sample = new MooncakeSampleGenerator(5).generate(3000, 6.0);
    for (MooncakeTrace.Entry e : sample) {
      sampleUses.merge(e.hashIds()[0], 1, Integer::sum);
    }
    assertThat(sampleUses.values().stream().mapToInt(Integer::intValue).max().orElseThrow())
        .as("the sample's most shared prefix").isGreaterThan(2 * top);
  }

  /**
   * Bursts: over the first half of the trace (its end thins out to the last chat sessions' later turns), the busiest
   * 4-second window holds several times the arrivals of an average one.
   */
  @Test
  void arrivalsComeInBursts() {
    List<MooncakeTrace.Entry> half = TRACE.subList(0, TRACE.size() / 2);
    long span = half.get(half.size() - 1).timestampMillis() - half.get(0).timestampMillis();
    double meanPerWindow = half.size() * 4000.0 / span;
    int busiest = 0;
    for (int i = 0, j = 0; i < half.size(); i++) {
      while (half.get(i).timestampMillis() - half.get(j).timestampMillis() >= 4000) {
        j++;
      }
      busiest = Math.max(busiest, i - j + 1);
    }
    assertThat(busiest).isGreaterThan((int) (2.5 * meanPerWindow));
  }

  @Test
  void badArgumentsAreRefused() {
    assertThatThrownBy(() -> new LongTailTraceGenerator(1).generate(10, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new LongTailTraceGenerator(1).generate(-1, 1)).isInstanceOf(IllegalArgumentException.class);
    Set<Long> none = new HashSet<>();
    new LongTailTraceGenerator(1).generate(0, 1).forEach(e -> none.add(e.timestampMillis()));
    assertThat(none).isEmpty();
  }
}
