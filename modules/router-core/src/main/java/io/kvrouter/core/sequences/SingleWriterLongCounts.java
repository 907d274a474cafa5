package io.kvrouter.core.sequences;

import it.unimi.dsi.fastutil.HashCommon;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Reference counts of {@code long} keys, changed by one thread and probed by any: open addressing with linear
 * probing over a power-of-two table, deletion by backward shift (so no tombstones pile up), growth and shrinking by
 * copying into a new table published through a volatile field. Counts are the writer's alone; readers only ask
 * whether a key is held.
 *
 * <p>A probe racing a change may miss a key that the change is moving or see one it is removing; it never reports a
 * key that no one ever added. Moves copy a key into the gap before clearing its old slot, so a chain has no hole in
 * the middle at any instant.
 */
final class SingleWriterLongCounts {
  private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);
  /** Marks an empty slot; the key 0 itself is counted beside the table. */
  private static final long EMPTY = 0L;
  private static final int MIN_CAPACITY = 16;

  /** Keys and counts, index for index; the counts array is never read by probes. */
  private static final class Table {
    final long[] keys;
    final int[] counts;
    final int mask;

    Table(int capacity) {
      keys = new long[capacity];
      counts = new int[capacity];
      mask = capacity - 1;
    }
  }

  private volatile Table table = new Table(MIN_CAPACITY);
  private volatile boolean zeroHeld;
  /** Writer only. */
  private int zeroCount;
  /** Writer only: keys in the table (the key 0 not counted). */
  private int size;

  /** Whether any count of {@code key} is held. Any thread. */
  boolean contains(long key) {
    if (key == EMPTY) {
      return zeroHeld;
    }
    Table t = table;
    long[] keys = t.keys;
    int i = slot(key, t.mask);
    // bounded: a probe racing moves cannot loop forever
    for (int step = 0; step < keys.length; step++) {
      long k = (long) SLOT.getAcquire(keys, i);
      if (k == key) {
        return true;
      }
      if (k == EMPTY) {
        return false;
      }
      i = (i + 1) & t.mask;
    }
    return false;
  }

  /** Counts one more holder of {@code key}. Writer only. */
  void increment(long key) {
    if (key == EMPTY) {
      if (zeroCount++ == 0) {
        zeroHeld = true;
      }
      return;
    }
    Table t = table;
    int i = find(t, key);
    if (t.keys[i] == key) {
      t.counts[i]++;
      return;
    }
    t.counts[i] = 1;
    SLOT.setRelease(t.keys, i, key);
    if (++size > (t.keys.length >>> 1)) {
      resize(t.keys.length << 1);
    }
  }

  /** Counts one holder of {@code key} fewer; the last one drops it. A key not held is ignored. Writer only. */
  void decrement(long key) {
    if (key == EMPTY) {
      if (zeroCount > 0 && --zeroCount == 0) {
        zeroHeld = false;
      }
      return;
    }
    Table t = table;
    int i = find(t, key);
    if (t.keys[i] == EMPTY || --t.counts[i] > 0) {
      return;
    }
    removeAt(t, i);
    if (--size < (t.keys.length >>> 3) && t.keys.length > MIN_CAPACITY) {
      resize(t.keys.length >>> 1);
    }
  }

  /** The slot holding {@code key} (not 0), else the empty slot that ends its chain. Writer only. */
  private static int find(Table t, long key) {
    int i = slot(key, t.mask);
    while (t.keys[i] != key && t.keys[i] != EMPTY) {
      i = (i + 1) & t.mask;
    }
    return i;
  }

  /** Keys in the table, the key 0 included. Writer only. */
  int size() {
    return size + (zeroCount > 0 ? 1 : 0);
  }

  /** Empties slot {@code gap}, shifting back each later key of its chain whose home is not between them. */
  private static void removeAt(Table t, int gap) {
    long[] keys = t.keys;
    int j = gap;
    while (true) {
      j = (j + 1) & t.mask;
      long k = keys[j];
      if (k == EMPTY) {
        break;
      }
      int home = slot(k, t.mask);
      // k may move into the gap unless its home lies cyclically in (gap, j]
      boolean homeBetween = gap <= j ? gap < home && home <= j : gap < home || home <= j;
      if (!homeBetween) {
        t.counts[gap] = t.counts[j];
        SLOT.setRelease(keys, gap, k);
        gap = j;
      }
    }
    SLOT.setRelease(keys, gap, EMPTY);
    t.counts[gap] = 0;
  }

  private void resize(int capacity) {
    Table old = table;
    Table grown = new Table(capacity);
    for (int i = 0; i < old.keys.length; i++) {
      long k = old.keys[i];
      if (k != EMPTY) {
        int j = find(grown, k);
        grown.keys[j] = k;
        grown.counts[j] = old.counts[i];
      }
    }
    table = grown; // the volatile write publishes the filled arrays
  }

  private static int slot(long key, int mask) {
    return (int) HashCommon.mix(key) & mask;
  }
}
