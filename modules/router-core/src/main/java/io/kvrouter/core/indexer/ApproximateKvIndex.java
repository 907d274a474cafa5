package io.kvrouter.core.indexer;

import io.kvrouter.core.hashing.PrefixClosed;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionView;
import java.util.Arrays;
import java.util.function.LongSupplier;

/**
 * The KV index of workers that publish no KV events: it guesses their caches from the router's own Book decisions.
 * A booked request's blocks are assumed cached on the chosen rank for a TTL (default 120 s, Dynamo's
 * {@code router_ttl_secs}); routing the same prefix again refreshes it. A size bound (default 2^20 (block, rank)
 * entries) keeps a burst of distinct prompts from growing it without limit: when exceeded, the entries closest to
 * expiry go first until the index is back at the target ratio (default 80 %), as Dynamo's PruneManager does.
 *
 * <p>Time is always passed in ({@code nowMillis}) or read from the injected clock, never from the system, so tests
 * run TTLs without sleeping. Lookups ignore entries whose TTL has passed even before {@link #expire} drops them.
 *
 * <p>Entries live in the same lock-free tree as the event-fed index (see {@link Node}); an entry's payload is its
 * expiry in milliseconds relative to the first recorded time (40 bits: 34 years). Writes are serialized by this
 * object's monitor. A min-heap over (expiry, deeper first) holds exactly one item per entry; a refresh only moves the
 * entry's expiry, and the stale heap item is re-queued at the new expiry when it surfaces, so refreshing costs no
 * heap work. Popping deeper entries first at equal expiry keeps each rank's blocks prefix-closed while pruning.
 */
public final class ApproximateKvIndex implements KvOverlapSource {
  public static final long DEFAULT_TTL_MILLIS = 120_000;
  public static final int DEFAULT_MAX_ENTRIES = 1 << 20;
  public static final double DEFAULT_PRUNE_TARGET_RATIO = 0.8;

  private final RadixTree tree = new RadixTree(false);
  private final long ttlMillis;
  private final int maxEntries;
  private final int pruneTarget;
  private final LongSupplier clock;
  private final ExpiryHeap heap = new ExpiryHeap();
  private volatile long base;
  private boolean baseSet;

  /** Defaults: 120 s TTL, 2^20 entries, prune to 80 %. */
  public ApproximateKvIndex(LongSupplier clock) {
    this(DEFAULT_TTL_MILLIS, DEFAULT_MAX_ENTRIES, DEFAULT_PRUNE_TARGET_RATIO, clock);
  }

  /**
   * @param clock milliseconds, read only by {@link #overlaps(SelectionView, long[], Candidates)} (the selection path
   *     has no time argument); must be on the same time line as the {@code nowMillis} passed to the writes
   */
  public ApproximateKvIndex(long ttlMillis, int maxEntries, double pruneTargetRatio, LongSupplier clock) {
    if (ttlMillis <= 0) {
      throw new IllegalArgumentException("ttlMillis must be positive, got " + ttlMillis);
    }
    if (maxEntries <= 0) {
      throw new IllegalArgumentException("maxEntries must be positive, got " + maxEntries);
    }
    if (!(pruneTargetRatio > 0 && pruneTargetRatio <= 1)) {
      throw new IllegalArgumentException("pruneTargetRatio must be in (0, 1], got " + pruneTargetRatio);
    }
    this.ttlMillis = ttlMillis;
    this.maxEntries = maxEntries;
    this.pruneTarget = (int) Math.floor(maxEntries * pruneTargetRatio);
    this.clock = clock;
  }

  // ---------------------------------------------------------------- writes

  /** Records that a request with these sequence hashes was booked on {@code rank} at {@code nowMillis}. */
  public void recordRouted(Rank rank, long[] sequenceHashes, long nowMillis) {
    recordRouted(rank, sequenceHashes, sequenceHashes.length, nowMillis);
  }

  public synchronized void recordRouted(Rank rank, long[] sequenceHashes, int count, long nowMillis) {
    if (count == 0) {
      return;
    }
    if (!baseSet) {
      base = nowMillis;
      baseSet = true;
    }
    long expiry = relative(nowMillis + ttlMillis);
    RankState state = tree.stateForWrite(rank);
    Node at = tree.root;
    for (int depth = 0; depth < count; depth++) {
      Node child = tree.childOrCreate(at, sequenceHashes[depth]);
      int index = child.indexOf(state.id);
      if (index < 0) {
        tree.insertEntry(child, state, expiry, 0L);
        heap.push(expiry, depth, child, state);
      } else if (child.payloadAt(index) < expiry) {
        child.setPayloadAt(index, expiry);
      }
      at = child;
    }
    if (tree.entryCount() > maxEntries) {
      prune(pruneTarget, Long.MIN_VALUE);
    }
  }

  /** Drops every entry whose TTL has passed at {@code nowMillis}. */
  public synchronized void expire(long nowMillis) {
    if (baseSet) {
      prune(Long.MAX_VALUE, relative(nowMillis));
    }
  }

  /** Drops every rank of {@code workerId}. */
  public synchronized void removeWorker(String workerId) {
    boolean any = false;
    for (RankState state : tree.statesOfWorker(workerId)) {
      tree.forget(state);
      any = true;
    }
    if (any) {
      heap.removeItemsOfRemovedRanks((node, state) -> {
        int index = node.indexOf(state.id);
        if (index >= 0) {
          tree.removeEntryAt(node, index);
        }
      });
    }
  }

  /**
   * Pops heap items while the index holds more than {@code target} entries or the smallest expiry is at most
   * {@code expiredAt}. An item whose entry was refreshed goes back at its new expiry; one whose entry is gone (its
   * rank was removed) is discarded.
   */
  private void prune(long target, long expiredAt) {
    while (heap.size() > 0 && (tree.entryCount() > target || heap.minExpiry() <= expiredAt)) {
      Node node = heap.minNode();
      RankState state = heap.minState();
      long key = heap.minExpiry();
      int depth = heap.minDepth();
      heap.pop();
      if (state.removed) {
        continue;
      }
      int index = node.indexOf(state.id);
      if (index < 0) {
        continue;
      }
      long current = node.payloadAt(index);
      if (current > key) {
        heap.push(current, depth, node, state);
      } else {
        tree.removeEntryAt(node, index);
      }
    }
  }

  private long relative(long millis) {
    long rel = millis - base;
    return Math.max(1L, Math.min(rel, Node.PAYLOAD_MASK));
  }

  // ---------------------------------------------------------------- reads (lock-free)

  @Override
  public void overlaps(SelectionView view, long[] sequenceHashes, Candidates candidates) {
    long now = clock.getAsLong();
    RadixTree.Scratch scratch = RadixTree.scratch();
    Node[] path = scratch.first(sequenceHashes.length);
    int matched = tree.walk(sequenceHashes, sequenceHashes.length, path);
    try {
      RankState[] states = tree.resolve(view);
      for (int i = 0; i < candidates.size(); i++) {
        candidates.setOverlap(i, 0, 0, 0);
      }
      fillDepths(candidates, states, null, path, matched, now - base, scratch);
    } finally {
      RadixTree.release(path, matched);
    }
  }

  /**
   * How many leading blocks of the path {@code id} holds unexpired at {@code nowRel}. A binary search: a route
   * refreshes its whole prefix at once and pruning takes the deepest first, so along any path an ancestor's expiry
   * is never earlier than a descendant's, and "held and unexpired" holds for a prefix of the path.
   */
  static int depth(Node[] path, int matched, int id, long nowRel) {
    return PrefixClosed.heldDepth(matched, k -> Node.payload(path[k].entries(), id) > nowRel);
  }

  /**
   * Sets the overlap of every candidate with a state in {@code states} and none in {@code overriding} (null: none):
   * the depth it holds unexpired. Which ranks hold which prefix of the path comes from one pass down it
   * ({@link KvIndex#heldDepths}: an entry is only added with its whole prefix and pruned deepest first, so along the
   * path the ranks holding a node are a subset of its parent's); then one expiry check per candidate at its deepest
   * entry, falling back to the binary search of {@link #depth} below it only when that entry has expired.
   */
  static void fillDepths(Candidates candidates, RankState[] states, RankState[] overriding, Node[] path, int matched,
      long nowRel, RadixTree.Scratch scratch) {
    int[] present = KvIndex.heldDepths(candidates, states, path, matched, scratch);
    for (int i = 0; i < candidates.size(); i++) {
      int rankIndex = candidates.rankIndex(i);
      RankState state = states[rankIndex];
      if (state == null || (overriding != null && overriding[rankIndex] != null)) {
        continue;
      }
      int p = present[i];
      int depth = p == 0 || Node.payload(path[p - 1].entries(), state.id) > nowRel ? p
          : depth(path, p - 1, state.id, nowRel);
      candidates.setOverlap(i, depth, 0, 0);
    }
  }

  long relativeNow(long nowMillis) {
    return nowMillis - base;
  }

  RadixTree tree() {
    return tree;
  }

  /** One rank's overlap at {@code nowMillis} (allocates; for diagnostics and tests). */
  public int overlap(Rank rank, long[] sequenceHashes, long nowMillis) {
    RankState state = tree.state(rank);
    if (state == null) {
      return 0;
    }
    Node[] path = new Node[sequenceHashes.length];
    int matched = tree.walk(sequenceHashes, sequenceHashes.length, path);
    return depth(path, matched, state.id, nowMillis - base);
  }

  /** (block, rank) entries currently held, expired or not yet dropped included. */
  public long entryCount() {
    return tree.entryCount();
  }

  public int blockCount() {
    return tree.nodeCount();
  }

  /**
   * A binary min-heap on parallel arrays ordered by (expiry ascending, depth descending), so that nothing is boxed
   * per entry: about 20 bytes per item (the arrays keep their peak size).
   */
  private static final class ExpiryHeap {
    private long[] expiry = new long[64];
    private int[] depth = new int[64];
    private Node[] nodes = new Node[64];
    private RankState[] states = new RankState[64];
    private int size;

    int size() {
      return size;
    }

    long minExpiry() {
      return expiry[0];
    }

    int minDepth() {
      return depth[0];
    }

    Node minNode() {
      return nodes[0];
    }

    RankState minState() {
      return states[0];
    }

    void push(long key, int d, Node node, RankState state) {
      if (size == expiry.length) {
        int capacity = size * 2;
        expiry = Arrays.copyOf(expiry, capacity);
        depth = Arrays.copyOf(depth, capacity);
        nodes = Arrays.copyOf(nodes, capacity);
        states = Arrays.copyOf(states, capacity);
      }
      set(size, key, d, node, state);
      siftUp(size++);
    }

    void pop() {
      size--;
      move(size, 0);
      nodes[size] = null;
      states[size] = null;
      if (size > 0) {
        siftDown(0);
      }
    }

    interface ItemAction {
      void accept(Node node, RankState state);
    }

    /** Drops every item of a removed rank, running {@code onRemoved} for each, then restores the heap order. */
    void removeItemsOfRemovedRanks(ItemAction onRemoved) {
      int kept = 0;
      for (int i = 0; i < size; i++) {
        if (states[i].removed) {
          onRemoved.accept(nodes[i], states[i]);
        } else {
          move(i, kept++);
        }
      }
      for (int i = kept; i < size; i++) {
        nodes[i] = null;
        states[i] = null;
      }
      size = kept;
      for (int i = size / 2 - 1; i >= 0; i--) {
        siftDown(i);
      }
    }

    private boolean less(int a, int b) {
      return expiry[a] < expiry[b] || (expiry[a] == expiry[b] && depth[a] > depth[b]);
    }

    private void siftUp(int i) {
      while (i > 0) {
        int parent = (i - 1) >>> 1;
        if (!less(i, parent)) {
          return;
        }
        swap(i, parent);
        i = parent;
      }
    }

    private void siftDown(int i) {
      while (true) {
        int left = 2 * i + 1;
        if (left >= size) {
          return;
        }
        int smallest = left;
        int right = left + 1;
        if (right < size && less(right, left)) {
          smallest = right;
        }
        if (!less(smallest, i)) {
          return;
        }
        swap(i, smallest);
        i = smallest;
      }
    }

    private void set(int i, long key, int d, Node node, RankState state) {
      expiry[i] = key;
      depth[i] = d;
      nodes[i] = node;
      states[i] = state;
    }

    private void move(int from, int to) {
      set(to, expiry[from], depth[from], nodes[from], states[from]);
    }

    private void swap(int a, int b) {
      long e = expiry[a];
      int d = depth[a];
      Node n = nodes[a];
      RankState s = states[a];
      move(b, a);
      set(b, e, d, n, s);
    }
  }
}
