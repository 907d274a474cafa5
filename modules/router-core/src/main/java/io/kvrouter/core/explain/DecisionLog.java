package io.kvrouter.core.explain;

import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The last decisions of one model on one node. Recording takes no lock, allocates nothing once warm and writes no
 * shared counter: each thread writes its own stripe (chosen by thread id), a ring of the last {@code recent}
 * decisions, each slot a {@link DecisionBuffer} reused from one decision to the next under a sequence number (odd
 * while written); reading copies each slot and keeps the copy only if the slot's number did not move meanwhile, then
 * merges the stripes newest first (by {@link System#nanoTime} at recording). Two threads whose ids share a stripe
 * and reach one slot at once: the second drops its decision (never a torn one).
 */
public final class DecisionLog {
  /** The largest {@code recent} accepted. */
  public static final int MAX_RECENT = 4096;
  private static final int MAX_STRIPES = 16;
  /** A slot being written when read is tried again at most this often, then left out of that read. */
  private static final int READ_TRIES = 4;
  private static final Comparator<Decision> NEWEST_FIRST = Comparator.comparingLong(Decision::nanos).reversed();
  private static final VarHandle VERSION;

  static {
    try {
      VERSION = MethodHandles.lookup().findVarHandle(Slot.class, "version", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final int recent;
  private final Stripe[] stripes;
  private final int mask;

  public DecisionLog(int recent) {
    this(recent, Integer.highestOneBit(Math.min(MAX_STRIPES, 2 * Runtime.getRuntime().availableProcessors()) * 2 - 1));
  }

  /** @param stripes a power of two */
  DecisionLog(int recent, int stripes) {
    requireValidRecent(recent);
    this.recent = recent;
    this.stripes = new Stripe[stripes];
    for (int i = 0; i < stripes; i++) {
      this.stripes[i] = new Stripe(recent);
    }
    this.mask = stripes - 1;
  }

  /** @throws IllegalArgumentException unless 1 ≤ recent ≤ {@link #MAX_RECENT} */
  public static int requireValidRecent(int recent) {
    if (recent < 1 || recent > MAX_RECENT) {
      throw new IllegalArgumentException("kvrouter.explain.recent must be between 1 and " + MAX_RECENT + ", got "
          + recent);
    }
    return recent;
  }

  public int recent() {
    return recent;
  }

  /**
   * Records what {@code c} holds right after {@code Selector.select} returned on {@code view} for {@code request}
   * (same thread, before its next selection).
   */
  public void record(DecisionKind kind, SelectionView view, SelectionRequest request, Candidates c, long unixMs) {
    record(kind, view, request, c, unixMs, null);
  }

  /** As above, for a Book that waited in the admission queue ({@code queue}: why; null: it did not wait). */
  public void record(DecisionKind kind, SelectionView view, SelectionRequest request, Candidates c, long unixMs,
      QueueWait queue) {
    Stripe stripe = stripes[(int) Thread.currentThread().getId() & mask];
    int i = stripe.next;
    Slot slot = stripe.slots[i];
    int version = slot.version;
    if ((version & 1) != 0 || !VERSION.compareAndSet(slot, version, version + 1)) {
      return; // another thread of this stripe is writing this slot
    }
    slot.buffer.fill(kind, view, request, c, unixMs, queue);
    VERSION.setRelease(slot, version + 2);
    stripe.next = i + 1 == stripe.slots.length ? 0 : i + 1;
  }

  /** The newest decisions, newest first: at most {@code limit} ({@code 0}: all kept) and at most {@link #recent}. */
  public List<Decision> newest(int limit) {
    List<Decision> all = new ArrayList<>();
    for (Stripe stripe : stripes) {
      for (Slot slot : stripe.slots) {
        Decision copy = slot.read();
        if (copy != null) {
          all.add(copy);
        }
      }
    }
    all.sort(NEWEST_FIRST);
    int kept = Math.min(limit <= 0 ? recent : Math.min(limit, recent), all.size());
    return new ArrayList<>(all.subList(0, kept));
  }

  /** One thread's ring (threads whose ids collide share one). */
  private static final class Stripe {
    private final Slot[] slots;
    /** Next slot to write; plain on purpose: a stale value only makes a writer meet a busy slot or reuse one. */
    private int next;

    Stripe(int capacity) {
      slots = new Slot[capacity];
      for (int i = 0; i < capacity; i++) {
        slots[i] = new Slot();
      }
    }
  }

  private static final class Slot {
    /** 0: never written; odd: being written; even: stable. */
    @SuppressWarnings("unused") // through VERSION
    private volatile int version;
    private final DecisionBuffer buffer = new DecisionBuffer();

    /** A consistent copy, or null when never written or written throughout {@link #READ_TRIES} tries. */
    Decision read() {
      for (int tries = 0; tries < READ_TRIES; tries++) {
        int before = (int) VERSION.getAcquire(this);
        if (before == 0) {
          return null;
        }
        if ((before & 1) != 0) {
          Thread.onSpinWait();
          continue;
        }
        Decision copy;
        try {
          copy = buffer.snapshot();
        } catch (RuntimeException torn) {
          continue; // a writer replaced the arrays under the copy: the version check below would fail anyway
        }
        VarHandle.acquireFence();
        if ((int) VERSION.getAcquire(this) == before) {
          return copy;
        }
      }
      return null;
    }
  }
}
