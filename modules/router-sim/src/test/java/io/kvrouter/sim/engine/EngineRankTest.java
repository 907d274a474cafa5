package io.kvrouter.sim.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class EngineRankTest {
  private static final int BLOCK = 4;

  private static SimRequest request(String id, int prompt, int output, int seed) {
    int[] tokens = IntStream.range(0, prompt + output).map(i -> seed * 100_000 + i).toArray();
    return SimRequest.of(id, 0, tokens, prompt, BLOCK);
  }

  private static SimRequest sharing(String id, int shared, int prompt, int output) {
    int[] tokens = IntStream.range(0, prompt + output).map(i -> i < shared ? i : 500_000 + i + id.hashCode())
        .toArray();
    return SimRequest.of(id, 0, tokens, prompt, BLOCK);
  }

  private static EngineRank rank(int blocks, int batchedTokens, int maxRunning) {
    return new EngineRank(new KvBlockCache(blocks, 3), TimingModel.llama8bOnH100(),
        new EngineRank.Limits(batchedTokens, maxRunning, 0));
  }

  @Test
  void aStepNeverSchedulesMoreThanTheBatchedTokenBudget() {
    EngineRank rank = rank(1_000, 64, 16);
    rank.enqueue(request("a", 100, 3, 1));
    rank.enqueue(request("b", 100, 3, 2));
    rank.beginStep();
    EngineRank.StepOutcome first = rank.endStep();
    // 64 tokens of a's prompt: no first token yet, b not admitted
    assertThat(first.firstTokens()).isEmpty();
    assertThat(rank.waitingCount()).isEqualTo(1);
    assertThat(rank.pendingPrefillTokens()).isEqualTo(36 + 100);
    rank.beginStep();
    EngineRank.StepOutcome second = rank.endStep();
    // 36 for a, then b is admitted with the remaining 28
    assertThat(second.firstTokens()).extracting(a -> a.request().id()).containsExactly("a");
    assertThat(rank.waitingCount()).isZero();
    assertThat(rank.pendingPrefillTokens()).isEqualTo(72);
  }

  @Test
  void admissionStopsWhenTheCacheCannotReserveTheWholeSequence() {
    EngineRank rank = rank(30, 8_192, 16);
    rank.enqueue(request("a", 60, 20, 1)); // 20 blocks
    rank.enqueue(request("b", 40, 8, 2)); // 12 blocks: does not fit beside a
    rank.enqueue(request("c", 4, 4, 3)); // would fit, but may not overtake b
    rank.beginStep();
    assertThat(rank.waitingCount()).isEqualTo(2);
    assertThat(rank.cache().activeBlocks()).isEqualTo(20);
    while (rank.inFlight() == 3) {
      rank.endStep();
      rank.beginStep();
    }
    // a finished and freed its blocks: b and c are running now
    assertThat(rank.waitingCount()).isZero();
    assertThat(rank.cache().activeBlocks()).isLessThanOrEqualTo(30);
  }

  @Test
  void theRunningSetIsBounded() {
    EngineRank rank = rank(1_000, 8_192, 2);
    for (int i = 0; i < 5; i++) {
      rank.enqueue(request("r" + i, 8, 2, i));
    }
    rank.beginStep();
    assertThat(rank.inFlight() - rank.waitingCount()).isEqualTo(2);
  }

  @Test
  void aSharedPrefixIsServedFromTheCacheAndPrefillsFaster() {
    EngineRank rank = rank(1_000, 8_192, 16);
    rank.enqueue(sharing("first", 400, 404, 1));
    long cold = rank.beginStep();
    rank.endStep();
    while (rank.inFlight() > 0) {
      rank.beginStep();
      rank.endStep();
    }
    rank.enqueue(sharing("second", 400, 404, 1));
    long warm = rank.beginStep();
    EngineRank.StepOutcome outcome = rank.endStep();
    assertThat(outcome.firstTokens()).singleElement().satisfies(a -> assertThat(a.cachedTokens()).isEqualTo(400));
    assertThat(warm).isLessThan(cold);
  }

  @Test
  void everyRequestFinishesWithAllItsOutputAndLeavesNoActiveBlocks() {
    EngineRank rank = rank(200, 256, 8);
    for (int i = 0; i < 20; i++) {
      rank.enqueue(request("r" + i, 50 + i * 7, 1 + i % 5, i));
    }
    int finished = 0;
    for (int steps = 0; steps < 10_000 && rank.inFlight() > 0; steps++) {
      assertThat(rank.beginStep()).isPositive();
      finished += rank.endStep().finished().size();
      assertThat(rank.cache().activeBlocks()).isLessThanOrEqualTo(200);
    }
    assertThat(finished).isEqualTo(20);
    assertThat(rank.cache().activeBlocks()).isZero();
    assertThat(rank.servedRequests()).isEqualTo(20);
  }

  @Test
  void timingGrowsWithUncachedTokensBatchSizeAndContext() {
    TimingModel timing = TimingModel.llama8bOnH100();
    assertThat(timing.stepMicros(4_000, 4_000 * 2_000.0, 0, 0, 0))
        .isGreaterThan(timing.stepMicros(1_000, 1_000 * 500.0, 3_000, 0, 0));
    assertThat(timing.stepMicros(0, 0, 0, 64, 64 * 8_000L)).isGreaterThan(timing.stepMicros(0, 0, 0, 8, 8 * 8_000L));
    assertThat(timing.stepMicros(0, 0, 0, 8, 8 * 32_000L)).isGreaterThan(timing.stepMicros(0, 0, 0, 8, 8 * 1_000L));
    // one sequence decoding: weight reads dominate, about 6.5 ms on an H100
    assertThat(timing.stepMicros(0, 0, 0, 1, 1_000)).isBetween(5_000L, 8_000L);
  }
}
