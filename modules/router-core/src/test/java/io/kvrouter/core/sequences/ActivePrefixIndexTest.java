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
    index.add(A, 1, new long[] {11, 12, 13});
    index.add(A, 2, new long[] {11, 12, 13, 14, 15, 99});

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
    index.add(A, 1, shortOne);
    index.add(A, 2, longOne);
    index.add(A, 3, longOne);

    index.remove(A, 2);
    assertThat(index.matchedDepth(A, PROMPT)).as("one of two identical bookings left").isEqualTo(6);
    index.remove(A, 3);
    assertThat(index.matchedDepth(A, PROMPT)).as("only the short booking left").isEqualTo(3);
    index.remove(A, 1);
    assertThat(index.matchedDepth(A, PROMPT)).isZero();
  }

  @Test
  void removingABookingTwiceChangesNothing() {
    ActivePrefixIndex index = new ActivePrefixIndex();
    long[] prompt = {11, 12, 13};
    index.add(A, 1, prompt);
    index.remove(A, 1);
    index.remove(A, 1);
    index.add(A, 2, prompt);
    assertThat(index.matchedDepth(A, PROMPT)).isEqualTo(3);
  }

  @Test
  void aSecondRemoveOfOneBookingLeavesTheOthersBlocksHeld() {
    ActivePrefixIndex index = new ActivePrefixIndex();
    long[] prompt = {11, 12, 13};
    index.add(A, 1, prompt);
    index.add(A, 2, prompt);
    index.remove(A, 1);
    index.remove(A, 1);
    assertThat(index.matchedDepth(A, PROMPT)).isEqualTo(3);
    index.add(A, 2, new long[] {11});
    assertThat(index.matchedDepth(A, PROMPT)).as("adding a held attempt again changes nothing").isEqualTo(3);
    index.remove(A, 2);
    assertThat(index.matchedDepth(A, PROMPT)).isZero();
  }

  @Test
  void countsBeyondTheIntegerCacheAreExact() {
    ActivePrefixIndex index = new ActivePrefixIndex();
    long[] prefix = {11, 12};
    for (int i = 0; i < 300; i++) {
      index.add(A, i, prefix);
    }
    for (int i = 0; i < 299; i++) {
      index.remove(A, i);
    }
    assertThat(index.matchedDepth(A, PROMPT)).isEqualTo(2);
    index.remove(A, 299);
    assertThat(index.matchedDepth(A, PROMPT)).isZero();
  }

  @Test
  void removeWorkerForgetsEveryRankOfTheWorker() {
    ActivePrefixIndex index = new ActivePrefixIndex();
    index.add(A, 1, PROMPT);
    index.add(new Rank("a", 1), 2, PROMPT);
    index.add(B, 3, PROMPT);

    index.removeWorker("a");

    assertThat(index.matchedDepth(A, PROMPT)).isZero();
    assertThat(index.matchedDepth(new Rank("a", 1), PROMPT)).isZero();
    assertThat(index.matchedDepth(B, PROMPT)).isEqualTo(PROMPT.length);
  }
}
