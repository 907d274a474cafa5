package io.kvrouter.core.hashing;

import java.util.function.IntPredicate;

/**
 * A sequence hash names its whole prefix, so what a rank holds of a request is prefix-closed: if it holds block k it
 * holds every block before it. The held depth is then found by one binary search.
 */
public final class PrefixClosed {
  private PrefixClosed() {}

  /**
   * The length of the longest prefix of {@code [0, length)} whose every position is held, given that
   * {@code held} is true for a prefix of the positions and false after it. The first and last positions are probed
   * before the search: a rank holding none of a request, or all of it, costs one or two probes instead of log2(length).
   */
  public static int heldDepth(int length, IntPredicate held) {
    if (length == 0 || !held.test(0)) {
      return 0;
    }
    if (held.test(length - 1)) {
      return length;
    }
    int low = 1; // position 0 is held
    int high = length - 1; // position length - 1 is not
    while (low < high) {
      int mid = (low + high + 1) >>> 1;
      if (held.test(mid - 1)) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    return low;
  }
}
