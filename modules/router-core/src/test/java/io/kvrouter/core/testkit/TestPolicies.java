package io.kvrouter.core.testkit;

import io.kvrouter.core.policy.Picker;
import io.kvrouter.core.policy.PickerState;
import io.kvrouter.core.policy.Policy;
import io.kvrouter.core.policy.PolicyProvider;
import io.kvrouter.core.policy.ScoredCandidates;
import io.kvrouter.core.policy.Scorers;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Custom policies of the test-jar, registered through {@code META-INF/services} like any plug-in: the kv cost with
 * pickers of their own that pick as kv does from (seed, pick number). Two watch themselves for tests (how many picks
 * are inside {@code pick} at once; an optional gate a pick waits at); two do not, for benchmarks:
 * <ul>
 *   <li>{@value #SERIAL}: not thread-safe (a plain counter), watched: runs under the slot's lock;</li>
 *   <li>{@value #CONCURRENT}: thread-safe (an atomic counter), watched: runs without the lock;</li>
 *   <li>{@value #LOCKED}: not thread-safe, unwatched;</li>
 *   <li>{@value #ATOMIC}: thread-safe (one atomic increment per pick), unwatched.</li>
 * </ul>
 */
public final class TestPolicies implements PolicyProvider {
  public static final String SERIAL = "testkit_serial_kv";
  public static final String CONCURRENT = "testkit_concurrent_kv";
  public static final String LOCKED = "testkit_locked_kv";
  public static final String ATOMIC = "testkit_atomic_kv";

  private static final AtomicReference<Watched> LATEST = new AtomicReference<>();

  @Override
  public List<Definition> policies() {
    return List.of(
        new Definition(SERIAL, Scorers.KV, state -> remember(new Watched(state, false))),
        new Definition(CONCURRENT, Scorers.KV, state -> remember(new Watched(state, true))),
        new Definition(LOCKED, Scorers.KV, Locked::new),
        new Definition(ATOMIC, Scorers.KV, Atomic::new));
  }

  private static Watched remember(Watched picker) {
    LATEST.set(picker);
    return picker;
  }

  /** The watched picker made last (by the last SetPolicy to {@value #SERIAL} or {@value #CONCURRENT}). */
  public static Watched latest() {
    return LATEST.get();
  }

  /** A picker that counts how many picks are inside it at once and can hold each pick at a gate. */
  public static final class Watched implements Picker {
    private final long seed;
    private final boolean threadSafe;
    private final AtomicLong picks;
    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger mostInside = new AtomicInteger();
    private final AtomicInteger overlaps = new AtomicInteger();
    private volatile CountDownLatch gate;

    Watched(PickerState state, boolean threadSafe) {
      this.seed = state.seed();
      this.threadSafe = threadSafe;
      this.picks = new AtomicLong(state.picks());
    }

    @Override
    public int pick(ScoredCandidates candidates) {
      int now = inside.incrementAndGet();
      mostInside.accumulateAndGet(now, Math::max);
      if (now > 1) {
        overlaps.incrementAndGet();
      }
      try {
        CountDownLatch wait = gate;
        if (wait != null && !wait.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the test never opened the gate");
        }
        // a plain read-modify-write when not thread-safe: under the lock it loses no pick
        long pick = threadSafe ? picks.getAndIncrement() : plainIncrement();
        return Policy.KV.pick(seed, pick, candidates);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      } finally {
        inside.decrementAndGet();
      }
    }

    private long plainIncrement() {
      long before = picks.get();
      for (int spin = 0; spin < 20; spin++) {
        Thread.onSpinWait(); // widen the window in which an unlocked caller would overlap
      }
      picks.set(before + 1);
      return before;
    }

    @Override
    public PickerState state() {
      return new PickerState(seed, picks.get());
    }

    @Override
    public boolean threadSafe() {
      return threadSafe;
    }

    /** From now on every pick waits at {@code latch} (null: none). */
    public void holdPicksAt(CountDownLatch latch) {
      gate = latch;
    }

    /** Picks inside {@link #pick} right now. */
    public int inside() {
      return inside.get();
    }

    /** The most picks ever inside {@link #pick} at once. */
    public int mostInside() {
      return mostInside.get();
    }

    /** Picks that entered while another was inside. */
    public int overlaps() {
      return overlaps.get();
    }
  }

  /** kv's picks with a plain counter: not thread-safe, so its slot serializes it. */
  static final class Locked implements Picker {
    private final long seed;
    private long picks;

    Locked(PickerState state) {
      seed = state.seed();
      picks = state.picks();
    }

    @Override
    public int pick(ScoredCandidates candidates) {
      return Policy.KV.pick(seed, picks++, candidates);
    }

    @Override
    public PickerState state() {
      return new PickerState(seed, picks);
    }
  }

  /** kv's picks with one atomic increment per pick: thread-safe, called without the lock. */
  static final class Atomic implements Picker {
    private final long seed;
    private final AtomicLong picks;

    Atomic(PickerState state) {
      seed = state.seed();
      picks = new AtomicLong(state.picks());
    }

    @Override
    public int pick(ScoredCandidates candidates) {
      return Policy.KV.pick(seed, picks.getAndIncrement(), candidates);
    }

    @Override
    public PickerState state() {
      return new PickerState(seed, picks.get());
    }

    @Override
    public boolean threadSafe() {
      return true;
    }
  }
}
