package io.kvrouter.core.testkit;

import io.kvrouter.core.policy.Picker;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.policy.Pickers;
import io.kvrouter.core.policy.Policy;
import io.kvrouter.core.policy.ScoredCandidates;

/**
 * A built-in policy's picks with a plain (non-atomic) counter: the shape of a stateful custom picker, which is not
 * thread-safe and so runs under its slot's lock. From the same state it picks exactly as the lock-free built-in.
 */
public final class LockedPicker implements Picker {
  private final Policy policy;
  private final long seed;
  private long picks;

  public LockedPicker(Policy policy, PickerState state) {
    this.policy = policy;
    this.seed = state.seed();
    this.picks = state.picks();
  }

  @Override
  public int pick(ScoredCandidates candidates) {
    return Pickers.pick(policy, seed, picks++, candidates);
  }

  @Override
  public PickerState state() {
    return new PickerState(seed, picks);
  }
}
