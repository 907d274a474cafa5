package io.kvrouter.core.indexer;

import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.RankResolution;
import io.kvrouter.core.selection.SelectionView;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The structure shared by the event-fed and the approximate index: the nodes reached from a root by tokens hashes,
 * the registry of rank ids, and the read-side walk. Writers call the mutating methods under their index's lock;
 * {@link #walk} and {@link #state} are safe from any thread (see {@link Node} for why).
 */
final class RadixTree {
  final Node root = new Node(0L);
  /** Readers resolve a candidate's rank to its id here; a lock-free map, written only by the writer. */
  final ConcurrentHashMap<Rank, RankState> ranks = new ConcurrentHashMap<>();
  /** Bumped whenever a rank state is created or forgotten (see {@link RankResolution}). */
  volatile long epoch;
  private final boolean trackBlockIds;
  private final BitSet usedIds = new BitSet();
  private int idCursor;
  private volatile int nodeCount;
  private volatile long entryCount;

  RadixTree(boolean trackBlockIds) {
    this.trackBlockIds = trackBlockIds;
  }

  // ---------------------------------------------------------------- reader side

  /** The states of a view's ranks by rank index (null: the rank holds nothing here), cached per view and epoch. */
  RankState[] resolve(SelectionView view) {
    return resolution.resolve(view, epoch);
  }

  private final RankResolution<RankState> resolution = new RankResolution<>(ranks::get, RankState[]::new);

  RankState state(Rank rank) {
    return ranks.get(rank);
  }

  /** Follows {@code hashes[0, count)} from the root, writing the matched nodes into {@code path}; returns how many. */
  int walk(long[] hashes, int count, Node[] path) {
    Node at = root;
    int depth = 0;
    while (depth < count) {
      Node next = at.child(hashes[depth]);
      if (next == null) {
        break;
      }
      path[depth++] = next;
      at = next;
    }
    return depth;
  }

  int nodeCount() {
    return nodeCount;
  }

  long entryCount() {
    return entryCount;
  }

  /** Per-thread read scratch: two path buffers, so one caller can walk two trees at once without allocating. */
  static final class Scratch {
    private Node[] first = new Node[64];
    private Node[] second = new Node[64];
    private long[] keys = new long[64];
    private int[] depths = new int[64];

    long[] keys(int capacity) {
      if (keys.length < capacity) {
        keys = new long[Math.max(capacity, keys.length * 2)];
      }
      return keys;
    }

    int[] depths(int capacity) {
      if (depths.length < capacity) {
        depths = new int[Math.max(capacity, depths.length * 2)];
      }
      return depths;
    }

    Node[] first(int capacity) {
      if (first.length < capacity) {
        first = new Node[Math.max(capacity, first.length * 2)];
      }
      return first;
    }

    Node[] second(int capacity) {
      if (second.length < capacity) {
        second = new Node[Math.max(capacity, second.length * 2)];
      }
      return second;
    }
  }

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  static Scratch scratch() {
    return SCRATCH.get();
  }

  /** Drops the path's node references so a thread's scratch does not keep unlinked subtrees alive. */
  static void release(Node[] path, int length) {
    for (int i = 0; i < length; i++) {
      path[i] = null;
    }
  }

  // ---------------------------------------------------------------- writer side

  RankState stateForWrite(Rank rank) {
    RankState state = ranks.get(rank);
    if (state == null) {
      state = new RankState(rank, allocateId(), trackBlockIds);
      ranks.put(rank, state);
      epoch++;
    }
    return state;
  }

  /** Forgets {@code state} (readers stop resolving it at once); its entries must be removed by the caller. */
  void forget(RankState state) {
    ranks.remove(state.rank, state);
    epoch++;
    state.removed = true;
    usedIds.clear(state.id);
  }

  List<RankState> statesOfWorker(String workerId) {
    List<RankState> out = new ArrayList<>();
    for (RankState state : ranks.values()) {
      if (state.rank.workerId().equals(workerId)) {
        out.add(state);
      }
    }
    return out;
  }

  /**
   * Ids are handed out from a cursor that only wraps at {@link Node#MAX_RANK_ID}, so a freed id is not reused until
   * millions of rank incarnations later, long after any reader that could still hold it has finished.
   */
  private int allocateId() {
    int id = usedIds.nextClearBit(idCursor);
    if (id >= Node.MAX_RANK_ID) {
      id = usedIds.nextClearBit(0);
      if (id >= Node.MAX_RANK_ID) {
        throw new IllegalStateException("more than " + Node.MAX_RANK_ID + " live ranks in one index");
      }
    }
    usedIds.set(id);
    idCursor = id + 1;
    return id;
  }

  Node childOrCreate(Node parent, long hash) {
    Node child = parent.child(hash);
    if (child == null) {
      child = new Node(hash);
      parent.addChild(child);
      nodeCount++;
    }
    return child;
  }

  void insertEntry(Node node, RankState state, long payload, long blockId) {
    node.insertEntry(state.id, payload, trackBlockIds, blockId);
    entryCount++;
  }

  /** For bulk removals that bypass {@link #removeEntryAt}. */
  void adjustEntries(long delta) {
    entryCount += delta;
  }

  /** Removes the entry at {@code index} and unlinks the node (and emptied ancestors) if nothing needs it. */
  void removeEntryAt(Node node, int index) {
    node.removeEntryAt(index);
    entryCount--;
    pruneUp(node);
  }

  /**
   * Unlinks {@code node} and then each ancestor while it holds no rank and has no child: such nodes can never match
   * for anyone, and keeping them would leak memory as prompts churn.
   */
  void pruneUp(Node node) {
    Node n = node;
    while (n != root && n.parent != null && !n.hasEntries() && !n.hasKids()) {
      Node p = n.parent;
      p.removeChild(n);
      nodeCount--;
      n = p;
    }
  }
}
