package io.kvrouter.core.policy;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Picker implementations for each {@link Policy}.
 *
 * <p>The state of a picker is (seed, pick counter). Each pick takes the next number from the counter and draws its
 * randomness from (seed, pick number, draw index) through a stateless mixer; the round-robin cursor is the counter
 * itself. So restoring (seed, counter) replays the same picks — what the parity tests rely on — and a picker whose
 * counter is atomic needs no lock: {@link #create} gives those. {@link #pick} is the pick itself, a pure function of
 * (policy, seed, pick number, candidates), for pickers that keep their counter elsewhere.
 *
 * <p>The lock-free pickers other than round-robin take pick numbers from the shared counter in chunks of
 * {@link #CHUNK}, each thread using its own chunk: one atomic increment per pick made every concurrent Select write
 * the same cache line, which doubled a 4-worker Select's CPU cost on two cores (router-bench README, "The advisory
 * floor"). A single thread still gets consecutive numbers, so one caller replays exactly what a locked picker picks;
 * round-robin keeps one increment per pick, since its rotation is global, and so does a caller whose candidates pick
 * in order ({@link ScoredCandidates#picksInOrder}: the admission actor, which runs on whichever dispatcher thread is
 * free), so its picks are the same whatever threads ran it.
 */
public final class Pickers {
  /** Pick numbers a thread claims at once from a lock-free picker's shared counter. */
  static final int CHUNK = 64;

  private Pickers() {}

  /** A built-in policy's lock-free picker (a custom policy's come from {@link Policy#newPicker}). */
  public static Picker create(Policy policy, PickerState state) {
    if (!policy.isBuiltIn()) {
      throw new IllegalArgumentException("custom policy '" + policy.wireName() + "' makes its own pickers");
    }
    return new BuiltIn(policy, state);
  }

  /** A fresh built-in picker seeded from {@code seed}. */
  public static Picker create(Policy policy, long seed) {
    return create(policy, new PickerState(seed, 0));
  }

  /** Pick number {@code pick} of a picker seeded with {@code seed}: the same inputs always give the same index. */
  public static int pick(Policy policy, long seed, long pick, ScoredCandidates c) {
    return policy.pick(seed, pick, c);
  }

  /** One uniformly distributed 64-bit draw for (seed, pick, draw): the SplitMix64 finalizer over a unique input. */
  static long draw(long seed, long pick, int draw) {
    long z = seed + pick * 0x9E3779B97F4A7C15L + (draw + 1) * 0xD1B54A32D192ED03L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Uniform in [0, bound) from a 64-bit draw. */
  static int below(long random, int bound) {
    return (int) (((random >>> 32) * bound) >>> 32);
  }

  /** Uniform in [0, 1) from a 64-bit draw. */
  static double unit(long random) {
    return (random >>> 11) * 0x1.0p-53;
  }

  /**
   * Minimum cost; ties broken uniformly at random by reservoir sampling (the k-th tie wins with probability 1/k).
   */
  static int minCostReservoir(ScoredCandidates c, long seed, long pick) {
    int best = 0;
    double bestCost = c.cost(0);
    int ties = 1;
    for (int i = 1; i < c.size(); i++) {
      double cost = c.cost(i);
      if (cost < bestCost) {
        best = i;
        bestCost = cost;
        ties = 1;
      } else if (cost == bestCost && below(draw(seed, pick, ties), ++ties) == 0) {
        best = i;
      }
    }
    return best;
  }

  /**
   * Softmax over range-normalised negated costs: p_i ∝ exp(-(c_i - min) / ((max - min) · T)); uniform when all costs
   * are equal. Weights go to the per-call scratch in {@code c}.
   */
  static int softmax(ScoredCandidates c, double temperature, long random) {
    int n = c.size();
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      min = Math.min(min, c.cost(i));
      max = Math.max(max, c.cost(i));
    }
    double range = max - min;
    if (!(range > 0) || Double.isInfinite(range)) {
      return below(random, n);
    }
    double[] weights = c.scratchWeights();
    double total = 0;
    for (int i = 0; i < n; i++) {
      double w = Math.exp(-(c.cost(i) - min) / (range * temperature));
      weights[i] = w;
      total += w;
    }
    double u = unit(random) * total;
    double cumulative = 0;
    for (int i = 0; i < n; i++) {
      cumulative += weights[i];
      if (cumulative >= u) {
        return i;
      }
    }
    return n - 1;
  }

  static int powerOfTwo(ScoredCandidates c, long first, long second) {
    int n = c.size();
    if (n == 1) {
      return 0;
    }
    int a = below(first, n);
    int b = below(second, n - 1);
    if (b >= a) {
      b++;
    }
    return c.cost(b) < c.cost(a) ? b : a;
  }

  /** Every built-in policy, with an atomic pick counter: thread-safe, so its slot never takes the lock. */
  private static final class BuiltIn implements Picker {
    private final Policy policy;
    private final long seed;
    /** The next pick number no thread has claimed. */
    private final AtomicLong atomicPicks;
    /** Except round-robin: the calling thread's chunk of pick numbers, {next, end}. */
    private final ThreadLocal<long[]> chunk = ThreadLocal.withInitial(() -> new long[2]);

    BuiltIn(Policy policy, PickerState state) {
      this.policy = policy;
      this.seed = state.seed();
      this.atomicPicks = new AtomicLong(state.picks());
    }

    private long nextPick(boolean inOrder) {
      if (policy.rotation() || inOrder) {
        return atomicPicks.getAndIncrement();
      }
      long[] own = chunk.get();
      if (own[0] == own[1]) {
        own[0] = atomicPicks.getAndAdd(CHUNK);
        own[1] = own[0] + CHUNK;
      }
      return own[0]++;
    }

    /**
     * The next pick number: the calling thread's next one while it holds the last chunk claimed (so a single
     * caller's state is exact), else the first unclaimed one.
     */
    private long cursor() {
      long unclaimed = atomicPicks.get();
      long[] own = chunk.get();
      return !policy.rotation() && own[1] == unclaimed && own[0] < own[1] ? own[0] : unclaimed;
    }

    @Override
    public int pick(ScoredCandidates c) {
      return policy.pick(seed, nextPick(c.picksInOrder()), c);
    }

    @Override
    public PickerState state() {
      return new PickerState(seed, cursor());
    }

    @Override
    public boolean threadSafe() {
      return true;
    }
  }
}
