package io.kvrouter.core.policy;


/**
 * Picks one candidate. A picker whose mutable state is a single atomic (the built-ins) declares itself thread-safe
 * and is called without the lock; any other picker runs only under its {@link PickerSlot}'s lock, whether the
 * admission actor or an inline Select calls it.
 */
public interface Picker {
  /** Returns an index in [0, candidates.size()). Costs are already computed; per-call scratch lives in candidates. */
  int pick(ScoredCandidates candidates);

  PickerState state();

  /** True when {@link #pick} may run concurrently from many threads. */
  default boolean threadSafe() {
    return false;
  }
}
