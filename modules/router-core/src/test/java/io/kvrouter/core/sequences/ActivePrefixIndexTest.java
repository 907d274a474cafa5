package io.kvrouter.core.sequences;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.model.Rank;
import org.junit.jupiter.api.Test;

class ActivePrefixIndexTest {
  private static final Rank A = new Rank("a", 0);
  private static final Rank B = new Rank("b", 0);
  private static final long[] PROMPT = {11, 12, 13, 14, 15, 16, 17, 18};

  @Test
  void matchedDepthIsTheLongestPrefixAnyLiveBookingHolds() {
    ActivePrefixIndex index = new ActivePrefixIndex();
    index.add(A, new long[] {11, 12, 13});
    index.add(A, new long[] {11, 12, 13, 14, 15, 99});

    assertThat(index.matchedDepth(A, PROMPT)).isEqualTo(5);
    assertThat(index.matchedDepth(B, PROMPT)).isZero();
    assertThat(index.matchedDepth(A, new long[] {42, 43})).isZero();
    assertThat(index.matchedDepth(A, new long[0])).isZero();
  }

  @Test
  void sharedBlocksStayHeldUntilTheirLastBookingIsRemoved() {
    ActivePrefixIndex index = new ActivePrefixIndex();
    long[] shortOne = {11, 12, 13};
    long[] longOne = {11, 12, 13, 14, 15, 16};
    index.add(A, shortOne);
    index.add(A, longOne);
    index.add(A, longOne);

    index.remove(A, longOne);
    assertThat(index.matchedDepth(A, PROMPT)).as("one of two identical bookings left").isEqualTo(6);
    index.remove(A, longOne);
    assertThat(index.matchedDepth(A, PROMPT)).as("only the short booking left").isEqualTo(3);
    index.remove(A, shortOne);
    assertThat(index.matchedDepth(A, PROMPT)).isZero();
    index.remove(A, shortOne);
    assertThat(index.matchedDepth(A, PROMPT)).as("removing twice changes nothing").isZero();
  }

  @Test
  void countsBeyondTheIntegerCacheAreExact() {
    ActivePrefixIndex index = new ActivePrefixIndex();
    long[] prefix = {11, 12};
    for (int i = 0; i < 300; i++) {
      index.add(A, prefix);
    }
    for (int i = 0; i < 299; i++) {
      index.remove(A, prefix);
    }
    assertThat(index.matchedDepth(A, PROMPT)).isEqualTo(2);
    index.remove(A, prefix);
    assertThat(index.matchedDepth(A, PROMPT)).isZero();
  }

  @Test
  void removeWorkerForgetsEveryRankOfTheWorker() {
    ActivePrefixIndex index = new ActivePrefixIndex();
    index.add(A, PROMPT);
    index.add(new Rank("a", 1), PROMPT);
    index.add(B, PROMPT);

    index.removeWorker("a");

    assertThat(index.matchedDepth(A, PROMPT)).isZero();
    assertThat(index.matchedDepth(new Rank("a", 1), PROMPT)).isZero();
    assertThat(index.matchedDepth(B, PROMPT)).isEqualTo(PROMPT.length);
  }
}
