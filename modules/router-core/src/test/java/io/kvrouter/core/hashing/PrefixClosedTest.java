package io.kvrouter.core.hashing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PrefixClosedTest {

  @Test
  void theDepthIsTheHeldPrefixForEveryLengthAndDepth() {
    for (int length = 0; length <= 40; length++) {
      for (int depth = 0; depth <= length; depth++) {
        int held = depth;
        assertThat(PrefixClosed.heldDepth(length, k -> k < held)).as("length %d, depth %d", length, depth)
            .isEqualTo(depth);
      }
    }
  }

  @Test
  void noneAndAllOfARequestCostOneAndTwoProbes() {
    List<Integer> probed = new ArrayList<>();
    assertThat(PrefixClosed.heldDepth(128, k -> probed.add(k) && false)).isZero();
    assertThat(probed).containsExactly(0);
    probed.clear();
    assertThat(PrefixClosed.heldDepth(128, k -> probed.add(k))).isEqualTo(128);
    assertThat(probed).containsExactly(0, 127);
  }

  @Test
  void aPartialPrefixIsFoundWithoutProbingPastTheBounds() {
    List<Integer> probed = new ArrayList<>();
    assertThat(PrefixClosed.heldDepth(128, k -> probed.add(k) && k < 77)).isEqualTo(77);
    assertThat(probed).allSatisfy(k -> assertThat(k).isBetween(0, 127)).hasSizeLessThanOrEqualTo(2 + 7);
  }
}
