package io.kvrouter.core.explain;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The last decisions of one model on one node. Recording takes no lock and writes no shared counter: each thread
 * writes its own stripe (chosen by thread id), a ring of the last {@code recent} decisions; reading merges the
 * stripes, newest first (ordered by {@link System#nanoTime} at recording). Two threads that share a stripe and
 * record at the same instant may overwrite each other's slot: that decision is lost, never torn (a slot holds a
 * whole, immutable {@link Decision}).
 */
public final class DecisionLog {
  /** The largest {@code recent} accepted. */
  public static final int MAX_RECENT = 4096;
  private static final int MAX_STRIPES = 16;
  private static final Comparator<Decision> NEWEST_FIRST = Comparator.comparingLong(Decision::nanos).reversed();

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

  public void record(Decision decision) {
    stripes[(int) Thread.currentThread().getId() & mask].add(decision);
  }

  /** The newest decisions, newest first: at most {@code limit} ({@code 0}: all kept) and at most {@link #recent}. */
  public List<Decision> newest(int limit) {
    List<Decision> all = new ArrayList<>();
    for (Stripe stripe : stripes) {
      stripe.newestFirstInto(all);
    }
    all.sort(NEWEST_FIRST);
    int kept = Math.min(limit <= 0 ? recent : Math.min(limit, recent), all.size());
    return new ArrayList<>(all.subList(0, kept));
  }

  /** One thread's ring (threads whose ids collide share one). */
  private static final class Stripe {
    private final Decision[] slots;
    /** Next slot to write; plain on purpose (see the class comment). */
    private int next;

    Stripe(int capacity) {
      slots = new Decision[capacity];
    }

    void add(Decision decision) {
      int i = next;
      slots[i] = decision;
      next = i + 1 == slots.length ? 0 : i + 1;
    }

    void newestFirstInto(List<Decision> out) {
      int start = next;
      for (int k = 1; k <= slots.length; k++) {
        Decision d = slots[Math.floorMod(start - k, slots.length)];
        if (d != null) {
          out.add(d);
        }
      }
    }
  }
}
