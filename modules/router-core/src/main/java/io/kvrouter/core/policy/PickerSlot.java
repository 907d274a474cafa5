package io.kvrouter.core.policy;

import io.kvrouter.core.selection.Candidates;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A picker and the one lock around its mutable state. The actor (picking for a Book) and every inline Select take
 * the same lock; it is held only for the pick itself, never while projecting loads or building the answer.
 */
public final class PickerSlot {
  private final ReentrantLock lock = new ReentrantLock();
  private final Policy policy;
  private Picker picker;

  public PickerSlot(Policy policy, PickerState state) {
    this.policy = policy;
    this.picker = Pickers.create(policy, state);
  }

  public int pick(Candidates candidates) {
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

  /** Puts the picker back into a saved state: parity tests and benchmarks replay one pick on both paths. */
  public void restore(PickerState state) {
    lock.lock();
    try {
      picker = Pickers.create(policy, state);
    } finally {
      lock.unlock();
    }
  }
}
