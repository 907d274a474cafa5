package io.kvrouter.core.policy;

import io.kvrouter.core.selection.Candidates;

/**
 * Picks one candidate. Implementations keep mutable state (cursor, RNG) and are not thread-safe: they run only under
 * their {@link PickerSlot}'s lock, whether the admission actor or an inline Select calls them.
 */
public interface Picker {
  /** Returns an index in [0, candidates.size()). Costs are already computed; per-call scratch lives in candidates. */
  int pick(Candidates candidates);

  PickerState state();
}
