package io.kvrouter.core.policy;

import java.util.concurrent.locks.ReentrantLock;

/**
 * A picker and the one lock around its mutable state. A thread-safe picker (every built-in policy) picks without
 * the lock; any other picker is serialized by it, the actor (picking for a Book) and every inline Select alike. The
 * lock is held only for the pick itself, never while projecting loads or building the answer.
 */
public final class PickerSlot {
  private final ReentrantLock lock = new ReentrantLock();
  private final Policy policy;
  private volatile Picker picker;

  /** A built-in picker for {@code policy}, restored from {@code state}. */
  public PickerSlot(Policy policy, PickerState state) {
    this.policy = policy;
    this.picker = Pickers.create(policy, state);
  }

  /** Any picker, e.g. a stateful custom one; it keeps the lock unless it declares itself thread-safe. */
  public PickerSlot(Picker picker) {
    this.policy = null;
    this.picker = picker;
  }

  public int pick(ScoredCandidates candidates) {
    Picker current = picker;
    if (current.threadSafe()) {
      return current.pick(candidates);
    }
    lock.lock();
    try {
      return current.pick(candidates);
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

  /**
   * Puts a built-in picker back into a saved state: parity tests and benchmarks replay one pick on both paths.
   * Callers must not pick concurrently with a restore.
   */
  public void restore(PickerState state) {
    if (policy == null) {
      throw new UnsupportedOperationException("only built-in pickers can be restored");
    }
    lock.lock();
    try {
      picker = Pickers.create(policy, state);
    } finally {
      lock.unlock();
    }
  }
}
