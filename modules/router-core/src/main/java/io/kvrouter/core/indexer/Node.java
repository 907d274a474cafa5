package io.kvrouter.core.indexer;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * One block of the radix tree: the child reached from its parent by {@link #tokensHash}, and the ranks that hold it.
 *
 * <h2>Concurrency</h2>
 * One writer (holding its index's lock) mutates nodes while any number of readers walk them without locks. Every
 * reader-visible structure is either immutable once published or changed by single atomic stores:
 * <ul>
 *   <li>{@link #kids} is {@code null}, a single child {@code Node}, or an open-addressing table {@code Node[]}
 *       published through the volatile field. A table's slots only ever change by one release store each (a child
 *       placed into an empty or tombstone slot, a child replaced by {@link #TOMBSTONE}); a reader that races with
 *       such a store sees the old or the new slot, and either leads it to a correct answer for some moment of the
 *       write. Growing, shrinking or purging tombstones builds a fresh table and publishes it; the old table is never
 *       written again, so a reader still probing it sees a consistent (slightly stale) child set.</li>
 *   <li>{@link #entries} is a sorted array of {@code (rankId << 40) | payload}. Adding or removing a rank replaces
 *       the array (copy-on-write, published through the volatile field); changing a rank's payload (tier mask,
 *       expiry) is one release store of one {@code long}, which readers read with an opaque (untorn) load. Rank ids
 *       never change in place, so a reader's binary search always runs over a sorted array.</li>
 * </ul>
 * The writer-only fields ({@link #parent}, {@link #blockIds}, the kid counters) are never read by readers.
 *
 * <h2>Memory</h2>
 * A node with k ranks costs about 48 bytes plus 16 + 8k (entries) plus 16 + 8k (block ids, event-fed only), i.e.
 * roughly 12 + 16 bytes per (block, rank) entry at k = 4; children of a chain are a single reference.
 */
final class Node {
  static final long[] NO_ENTRIES = new long[0];
  /** Marks a removed child slot so probes for other keys keep going past it. */
  static final Node TOMBSTONE = new Node(0L);

  static final int ID_SHIFT = 40;
  static final long PAYLOAD_MASK = (1L << ID_SHIFT) - 1;
  /** Rank ids must stay below this so that entries sort (as signed longs) by id. */
  static final int MAX_RANK_ID = 1 << 23;

  private static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(Node[].class);
  private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

  final long tokensHash;
  /** Writer only; {@code null} for the root and once unlinked. */
  Node parent;
  private volatile Object kids;
  private volatile long[] entries = NO_ENTRIES;
  /** Writer only: the engine block hash each entry's rank stored this node under (event-fed trees only). */
  private long[] blockIds;
  private int kidLive;
  private int kidUsed;

  Node(long tokensHash) {
    this.tokensHash = tokensHash;
  }

  // ---------------------------------------------------------------- reader side (lock-free)

  /** The child reached by {@code hash}, or {@code null}. Safe from any thread. */
  Node child(long hash) {
    Object k = kids;
    if (k == null) {
      return null;
    }
    if (k instanceof Node single) {
      return single.tokensHash == hash ? single : null;
    }
    Node[] table = (Node[]) k;
    int mask = table.length - 1;
    int i = slot(hash) & mask;
    for (int probes = 0; probes <= mask; probes++) {
      Node n = (Node) SLOTS.getAcquire(table, i);
      if (n == null) {
        return null;
      }
      if (n != TOMBSTONE && n.tokensHash == hash) {
        return n;
      }
      i = (i + 1) & mask;
    }
    return null;
  }

  /** The current entries array; pass it to {@link #payload(long[], int)}. Safe from any thread. */
  long[] entries() {
    return entries;
  }

  /** The payload of rank {@code id} in {@code entries}, or -1 when the rank does not hold the block. */
  /** The rank id of entry {@code index}. Safe from any thread. */
  static int idAt(long[] entries, int index) {
    return (int) ((long) LONGS.getOpaque(entries, index) >>> ID_SHIFT);
  }

  static long payload(long[] entries, int id) {
    int lo = 0;
    int hi = entries.length - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      long e = (long) LONGS.getOpaque(entries, mid);
      int eid = (int) (e >>> ID_SHIFT);
      if (eid < id) {
        lo = mid + 1;
      } else if (eid > id) {
        hi = mid - 1;
      } else {
        return e & PAYLOAD_MASK;
      }
    }
    return -1;
  }

  // ---------------------------------------------------------------- writer side (under the index's lock)

  /** Index of rank {@code id}'s entry, or a negative value. */
  int indexOf(int id) {
    long[] e = entries;
    int lo = 0;
    int hi = e.length - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      int eid = (int) (e[mid] >>> ID_SHIFT);
      if (eid < id) {
        lo = mid + 1;
      } else if (eid > id) {
        hi = mid - 1;
      } else {
        return mid;
      }
    }
    return -(lo + 1);
  }

  long payloadAt(int index) {
    return entries[index] & PAYLOAD_MASK;
  }

  int rankIdAt(int index) {
    return (int) (entries[index] >>> ID_SHIFT);
  }

  int entryCount() {
    return entries.length;
  }

  boolean hasEntries() {
    return entries.length != 0;
  }

  /** Updates a payload in place; readers see the old or the new value, never a torn one. */
  void setPayloadAt(int index, long payload) {
    long[] e = entries;
    LONGS.setRelease(e, index, (e[index] & ~PAYLOAD_MASK) | payload);
  }

  long blockIdAt(int index) {
    return blockIds[index];
  }

  void setBlockIdAt(int index, long blockId) {
    blockIds[index] = blockId;
  }

  /** Adds rank {@code id} (absent) with {@code payload}; {@code trackBlockIds} keeps the aligned block id array. */
  void insertEntry(int id, long payload, boolean trackBlockIds, long blockId) {
    long[] old = entries;
    int at = -(indexOf(id) + 1);
    long[] next = new long[old.length + 1];
    System.arraycopy(old, 0, next, 0, at);
    next[at] = ((long) id << ID_SHIFT) | payload;
    System.arraycopy(old, at, next, at + 1, old.length - at);
    if (trackBlockIds) {
      long[] ids = new long[next.length];
      if (blockIds != null) {
        System.arraycopy(blockIds, 0, ids, 0, at);
        System.arraycopy(blockIds, at, ids, at + 1, old.length - at);
      }
      ids[at] = blockId;
      blockIds = ids;
    }
    entries = next;
  }

  void removeEntryAt(int index) {
    long[] old = entries;
    if (old.length == 1) {
      blockIds = null;
      entries = NO_ENTRIES;
      return;
    }
    long[] next = new long[old.length - 1];
    System.arraycopy(old, 0, next, 0, index);
    System.arraycopy(old, index + 1, next, index, old.length - index - 1);
    if (blockIds != null) {
      long[] ids = new long[next.length];
      System.arraycopy(blockIds, 0, ids, 0, index);
      System.arraycopy(blockIds, index + 1, ids, index, old.length - index - 1);
      blockIds = ids;
    }
    entries = next;
  }

  boolean hasKids() {
    return kidLive != 0;
  }

  /** Links {@code child} (whose hash is not yet present) under this node. */
  void addChild(Node child) {
    child.parent = this;
    Object k = kids;
    if (k == null) {
      kidLive = 1;
      kidUsed = 0;
      kids = child;
      return;
    }
    if (k instanceof Node single) {
      Node[] table = new Node[4];
      place(table, single);
      place(table, child);
      kidLive = 2;
      kidUsed = 2;
      kids = table;
      return;
    }
    Node[] table = (Node[]) k;
    if ((kidUsed + 1) * 4 > table.length * 3) {
      rebuild(table, kidLive + 1, child);
      return;
    }
    int mask = table.length - 1;
    int i = slot(child.tokensHash) & mask;
    while (true) {
      Node n = table[i];
      if (n == null || n == TOMBSTONE) {
        if (n == null) {
          kidUsed++;
        }
        kidLive++;
        SLOTS.setRelease(table, i, child);
        return;
      }
      i = (i + 1) & mask;
    }
  }

  /** Unlinks {@code child}; a no-op if it is not a child of this node. */
  void removeChild(Node child) {
    Object k = kids;
    if (k == null) {
      return;
    }
    if (k instanceof Node single) {
      if (single == child) {
        kids = null;
        kidLive = 0;
        child.parent = null;
      }
      return;
    }
    Node[] table = (Node[]) k;
    int mask = table.length - 1;
    int i = slot(child.tokensHash) & mask;
    for (int probes = 0; probes <= mask; probes++) {
      Node n = table[i];
      if (n == null) {
        return;
      }
      if (n == child) {
        SLOTS.setRelease(table, i, TOMBSTONE);
        kidLive--;
        child.parent = null;
        if (kidLive == 1) {
          for (Node rest : table) {
            if (rest != null && rest != TOMBSTONE) {
              kidUsed = 0;
              kids = rest;
              return;
            }
          }
        } else if (kidLive * 8 < table.length && table.length > 8) {
          rebuild(table, kidLive, null);
        }
        return;
      }
      i = (i + 1) & mask;
    }
  }

  /** Calls {@code action} on every live child (writer only). */
  void forEachChild(Consumer<Node> action) {
    Object k = kids;
    if (k == null) {
      return;
    }
    if (k instanceof Node single) {
      action.accept(single);
      return;
    }
    for (Node n : (Node[]) k) {
      if (n != null && n != TOMBSTONE) {
        action.accept(n);
      }
    }
  }

  int childCount() {
    return kidLive;
  }

  /** Copies the live children (plus {@code extra}) into a fresh table at most half full and publishes it. */
  private void rebuild(Node[] old, int live, Node extra) {
    int capacity = Math.max(4, Integer.highestOneBit(Math.max(1, live * 2 - 1)) << 1);
    Node[] table = new Node[capacity];
    int placed = 0;
    for (Node n : old) {
      if (n != null && n != TOMBSTONE) {
        place(table, n);
        placed++;
      }
    }
    if (extra != null) {
      place(table, extra);
      placed++;
    }
    kidLive = placed;
    kidUsed = placed;
    kids = table;
  }

  private static void place(Node[] table, Node n) {
    int mask = table.length - 1;
    int i = slot(n.tokensHash) & mask;
    while (table[i] != null) {
      i = (i + 1) & mask;
    }
    table[i] = n;
  }

  private static int slot(long hash) {
    long h = hash * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32));
  }

  @Override
  public String toString() {
    return "Node[" + Long.toHexString(tokensHash) + ", entries=" + Arrays.toString(entries) + "]";
  }
}
