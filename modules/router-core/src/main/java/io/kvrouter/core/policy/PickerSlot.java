package io.kvrouter.core.policy;

import java.util.concurrent.locks.ReentrantLock;

/**
 * A picker and the one lock around its mutable state. A thread-safe picker (every built-in policy) picks without
 * the lock; any other picker (a custom policy's that does not declare itself thread-safe) is serialized by it, the actor (picking for a Book) and every inline Select alike. The
 * lock is held only for the pick itself, never while projecting loads or building the answer.
 */
public final class PickerSlot {
  private final ReentrantLock lock = new ReentrantLock();
  private final Picker picker;

  /** {@code policy}'s picker ({@link Policy#newPicker}), starting from {@code state}. */
  public PickerSlot(Policy policy, PickerState state) {
    this(policy.newPicker(state));
  }

  /** Any picker, e.g. a stateful custom one; it keeps the lock unless it declares itself thread-safe. */
  public PickerSlot(Picker picker) {
    this.picker = picker;
  }

  public int pick(ScoredCandidates candidates) {
    if (picker.threadSafe()) {
      return picker.pick(candidates);
    }
    lock.lock();
    try {
      return picker.pick(candidates);
    } finally {
      lock.unlock();
    }
  }

  public PickerState state() {
    lock.lock();
    try {
      return picker.state();
    } finally {
      lock.unlock();
    }
  }
}
