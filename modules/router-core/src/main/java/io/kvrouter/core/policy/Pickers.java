package io.kvrouter.core.policy;

import io.kvrouter.core.selection.Candidates;

/** Picker implementations for each {@link Policy}, created fresh or restored from a {@link PickerState}. */
public final class Pickers {
  private Pickers() {}

  public static Picker create(Policy policy, PickerState state) {
    return switch (policy) {
      case ROUND_ROBIN -> new RoundRobin(state);
      case RANDOM -> new Uniform(state);
      case LEAST_IN_FLIGHT -> new MinCost(state);
      case POWER_OF_TWO -> new PowerOfTwo(state);
      case KV -> new Kv(state);
    };
  }

  /** A fresh picker seeded from {@code seed}. */
  public static Picker create(Policy policy, long seed) {
    return create(policy, new PickerState(seed, 0));
  }

  /** Minimum cost; ties broken uniformly at random by reservoir sampling (the k-th tie wins with probability 1/k). */
  static int minCostReservoir(Candidates c, SplitMix64 rng) {
    int best = 0;
    double bestCost = c.cost(0);
    int ties = 1;
    for (int i = 1; i < c.size(); i++) {
      double cost = c.cost(i);
      if (cost < bestCost) {
        best = i;
        bestCost = cost;
        ties = 1;
      } else if (cost == bestCost && rng.nextInt(++ties) == 0) {
        best = i;
      }
    }
    return best;
  }

  /**
   * Softmax over range-normalised negated costs: p_i ∝ exp(-(c_i - min) / ((max - min) · T)); uniform when all costs
   * are equal. Sampling uses the per-call scratch in {@code c}.
   */
  static int softmax(Candidates c, double temperature, SplitMix64 rng) {
    int n = c.size();
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      min = Math.min(min, c.cost(i));
      max = Math.max(max, c.cost(i));
    }
    double range = max - min;
    if (!(range > 0) || Double.isInfinite(range)) {
      return rng.nextInt(n);
    }
    double[] weights = c.scratchWeights();
    double total = 0;
    for (int i = 0; i < n; i++) {
      double w = Math.exp(-(c.cost(i) - min) / (range * temperature));
      weights[i] = w;
      total += w;
    }
    double u = rng.nextDouble() * total;
    double cumulative = 0;
    for (int i = 0; i < n; i++) {
      cumulative += weights[i];
      if (cumulative >= u) {
        return i;
      }
    }
    return n - 1;
  }

  private abstract static class Seeded implements Picker {
    final SplitMix64 rng;
    final long cursor;

    Seeded(PickerState state) {
      this.rng = new SplitMix64(state.rngState());
      this.cursor = state.cursor();
    }

    @Override
    public PickerState state() {
      return new PickerState(rng.state(), cursor);
    }
  }

  private static final class RoundRobin implements Picker {
    private final long rngState;
    private long cursor;

    RoundRobin(PickerState state) {
      this.rngState = state.rngState();
      this.cursor = state.cursor();
    }

    @Override
    public int pick(Candidates c) {
      return (int) Math.floorMod(cursor++, (long) c.size());
    }

    @Override
    public PickerState state() {
      return new PickerState(rngState, cursor);
    }
  }

  private static final class Uniform extends Seeded {
    Uniform(PickerState state) {
      super(state);
    }

    @Override
    public int pick(Candidates c) {
      return rng.nextInt(c.size());
    }
  }

  /** least_in_flight: the cost is the rank's in-flight count. */
  private static final class MinCost extends Seeded {
    MinCost(PickerState state) {
      super(state);
    }

    @Override
    public int pick(Candidates c) {
      return minCostReservoir(c, rng);
    }
  }

  private static final class PowerOfTwo extends Seeded {
    PowerOfTwo(PickerState state) {
      super(state);
    }

    @Override
    public int pick(Candidates c) {
      int n = c.size();
      if (n == 1) {
        return 0;
      }
      int first = rng.nextInt(n);
      int second = rng.nextInt(n - 1);
      if (second >= first) {
        second++;
      }
      return c.cost(second) < c.cost(first) ? second : first;
    }
  }

  /** kv: temperature 0 picks the minimum cost (random tie-break), above 0 samples the softmax. */
  private static final class Kv extends Seeded {
    Kv(PickerState state) {
      super(state);
    }

    @Override
    public int pick(Candidates c) {
      double temperature = c.temperature();
      return temperature > 0 ? softmax(c, temperature, rng) : minCostReservoir(c, rng);
    }
  }
}
