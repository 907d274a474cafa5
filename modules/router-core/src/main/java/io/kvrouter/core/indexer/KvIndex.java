package io.kvrouter.core.indexer;

import io.kvrouter.core.hashing.PrefixClosed;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionView;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The event-fed KV index of one model: a radix tree navigated by tokens hashes (the router's sequence hashes) in
 * which each node lists the ranks that hold the block and on which tiers. The engine's block hash is only an id,
 * resolved through a per-rank map, so engines that salt their own hashes still match the router's.
 *
 * <h2>Rules</h2>
 * <ul>
 *   <li>Stored attaches its chain under the parent block of the same rank (or the root); a Stored whose parent the
 *       rank does not hold is dropped and counted ({@link #droppedStoreCount()}), as Dynamo does: without the parent
 *       the chain's position in the tree is unknown.</li>
 *   <li>Removed clears one tier; when a rank no longer holds a block on any tier, the rank's blocks below it go too
 *       (the rank could never match them again, since a match walks from the root). Hence a rank's blocks always form
 *       a prefix-closed set, which keeps removal local.</li>
 *   <li>A rank holds at most the blocks its caller allows ({@code maxBlocks}: its registered capacity times a
 *       configured multiple). A real engine never holds more, so a Stored beyond it is wrong or out of order: the
 *       blocks past the bound are not stored and are counted ({@link #overCapacityBlockCount()}); a Removed or
 *       Cleared makes room again.</li>
 *   <li>Event ids are one sequence per (worker, dp_rank): an old or duplicate id is ignored; a gap means events were
 *       lost, so the rank's view can no longer be trusted and is cleared before the event applies
 *       ({@link #gapCount()}).</li>
 * </ul>
 *
 * <h2>Reads</h2>
 * Lookups take no lock: the request's hashes are walked once into a thread-local path buffer, then each candidate's
 * tiered overlap is read off the path by binary search in each node's copy-on-write rank array. Writes (one writer
 * per model) are serialized by this object's monitor. See {@link Node} for why a lock-free reader always sees a
 * consistent state.
 */
public final class KvIndex implements KvOverlapSource {
  private static final int DEVICE = StorageTier.DEVICE.bit();
  private static final int UP_TO_HOST = StorageTier.HOST.atLeastAsFast();

  private final RadixTree tree = new RadixTree(true);
  private final ArrayDeque<Node> stack = new ArrayDeque<>();
  private final ArrayList<Node> order = new ArrayList<>();
  private volatile long gapCount;
  private volatile long droppedStoreCount;
  private volatile long overCapacityBlockCount;

  // ---------------------------------------------------------------- writes

  /**
   * Applies one event of {@code rank} with its per-rank {@code eventId}; returns {@code false} when the id was
   * already seen (duplicate or older) and the event was ignored.
   */
  public synchronized boolean apply(Rank rank, long eventId, KvEvent event) {
    return apply(rank, eventId, event, Integer.MAX_VALUE);
  }

  /** As {@link #apply(Rank, long, KvEvent)}, the rank holding at most {@code maxBlocks} blocks. */
  public synchronized boolean apply(Rank rank, long eventId, KvEvent event, int maxBlocks) {
    RankState state = tree.stateForWrite(rank);
    if (state.seenEvent) {
      if (eventId <= state.lastEventId) {
        return false;
      }
      if (eventId != state.lastEventId + 1) {
        clear(state);
        gapCount++;
      }
    }
    state.seenEvent = true;
    state.lastEventId = eventId;
    applyTo(state, event, maxBlocks);
    return true;
  }

  /** Drops every rank of {@code workerId}, blocks and event-id history alike. */
  public synchronized void removeWorker(String workerId) {
    for (RankState state : tree.statesOfWorker(workerId)) {
      tree.forget(state);
      clear(state);
    }
  }

  private void applyTo(RankState state, KvEvent event, int maxBlocks) {
    if (event instanceof KvEvent.Stored s) {
      stored(state, s, maxBlocks);
    } else if (event instanceof KvEvent.Removed r) {
      removed(state, r.tier(), r.blockHashes());
    } else if (event instanceof KvEvent.Cleared) {
      clear(state);
    } else {
      throw new IllegalArgumentException("unknown event " + event);
    }
  }

  /** Returns false if the chain was dropped (unknown parent) or cut at {@code maxBlocks}. */
  private boolean stored(RankState state, KvEvent.Stored event, int maxBlocks) {
    Node at = tree.root;
    if (event.parentBlockHash() != null) {
      at = state.lookup.get(event.parentBlockHash().longValue());
      if (at == null) {
        droppedStoreCount++;
        return false;
      }
    }
    int bit = event.tier().bit();
    long[] blockHashes = event.blockHashes();
    long[] tokensHashes = event.tokensHashes();
    for (int i = 0; i < blockHashes.length; i++) {
      long blockHash = blockHashes[i];
      Node previous = state.lookup.get(blockHash);
      Node child = at.child(tokensHashes[i]);
      if (previous != null && previous != child) {
        // The engine reused a block id for other content: its old placement is gone. That may take the chain's
        // own parent with it (a misbehaving engine); then the rest of the chain has nowhere to go.
        removeCascade(state, previous);
        if (at != tree.root && at.indexOf(state.id) < 0) {
          droppedStoreCount++;
          return false;
        }
      }
      int index = child == null ? -1 : child.indexOf(state.id);
      if (index < 0 && state.lookup.size() >= maxBlocks) {
        overCapacityBlockCount += blockHashes.length - i;
        return false;
      }
      child = tree.childOrCreate(at, tokensHashes[i]);
      index = child.indexOf(state.id);
      if (index < 0) {
        tree.insertEntry(child, state, bit, blockHash);
        countDeviceless(state, 0, bit);
      } else {
        setMask(state, child, index, child.payloadAt(index) | bit);
        long oldId = child.blockIdAt(index);
        if (oldId != blockHash) {
          state.lookup.remove(oldId, child);
          child.setBlockIdAt(index, blockHash);
        }
      }
      state.lookup.put(blockHash, child);
      at = child;
    }
    return true;
  }

  private void removed(RankState state, StorageTier tier, long[] blockHashes) {
    int bit = tier.bit();
    for (long blockHash : blockHashes) {
      Node node = state.lookup.get(blockHash);
      if (node == null) {
        continue;
      }
      int index = node.indexOf(state.id);
      long mask = node.payloadAt(index) & ~bit;
      if (mask != 0) {
        setMask(state, node, index, mask);
      } else {
        removeCascade(state, node);
      }
    }
  }

  /**
   * Removes {@code state}'s entries at {@code top} and every descendant that holds the rank. Only nodes holding the
   * rank are visited: the rank's blocks are prefix-closed, so none hides below a node without it. Children are
   * removed before their parents so pruning can climb.
   */
  private void removeCascade(RankState state, Node top) {
    order.clear();
    stack.push(top);
    while (!stack.isEmpty()) {
      Node n = stack.pop();
      order.add(n);
      n.forEachChild(c -> {
        if (c.indexOf(state.id) >= 0) {
          stack.push(c);
        }
      });
    }
    for (int i = order.size() - 1; i >= 0; i--) {
      Node n = order.get(i);
      int index = n.indexOf(state.id);
      state.lookup.remove(n.blockIdAt(index), n);
      countDeviceless(state, n.payloadAt(index), 0);
      tree.removeEntryAt(n, index);
    }
    order.clear();
  }

  private void clear(RankState state) {
    List<Node> nodes = new ArrayList<>(state.lookup.values());
    state.lookup.clear();
    for (Node n : nodes) {
      n.removeEntryAt(n.indexOf(state.id));
    }
    state.entriesWithoutDevice = 0;
    tree.adjustEntries(-nodes.size());
    for (Node n : nodes) {
      tree.pruneUp(n);
    }
  }

  private static void setMask(RankState state, Node node, int index, long mask) {
    long old = node.payloadAt(index);
    node.setPayloadAt(index, mask);
    countDeviceless(state, old, mask);
  }

  /** Keeps {@link RankState#entriesWithoutDevice} in step with one entry's mask going from {@code old} to {@code now}. */
  private static void countDeviceless(RankState state, long old, long now) {
    int change = (isDeviceless(now) ? 1 : 0) - (isDeviceless(old) ? 1 : 0);
    if (change != 0) {
      state.entriesWithoutDevice += change;
    }
  }

  /** A present entry (mask ≠ 0) that is not on the device. */
  private static boolean isDeviceless(long mask) {
    return mask != 0 && (mask & DEVICE) == 0;
  }

  // ---------------------------------------------------------------- reads (lock-free)

  @Override
  public void overlaps(SelectionView view, long[] sequenceHashes, Candidates candidates) {
    RadixTree.Scratch scratch = RadixTree.scratch();
    Node[] path = scratch.first(sequenceHashes.length);
    int matched = tree.walk(sequenceHashes, sequenceHashes.length, path);
    RankState[] states = tree.resolve(view);
    try {
      fillAll(candidates, states, path, matched, scratch);
    } finally {
      RadixTree.release(path, matched);
    }
  }

  /**
   * Reads one rank's tiered overlap off a walked path, packed as {@code device | host << 21 | disk << 42} so the
   * selection path allocates nothing. The device run is the leading blocks held on the device; the host run
   * continues from there over blocks held on host or device; the disk run continues over blocks held on any tier.
   * Each run stops at the first block the rank lacks at that speed. (2^21 blocks exceed any request limit.)
   */
  static long packed(Node[] path, int matched, RankState state) {
    int id = state.id;
    if (state.entriesWithoutDevice == 0) {
      // all on the device, and the rank's blocks are prefix-closed: the device run is the held depth
      return heldDepth(path, matched, id);
    }
    int k = 0;
    while (k < matched && (mask(path[k], id) & DEVICE) != 0) {
      k++;
    }
    int device = k;
    while (k < matched && (mask(path[k], id) & UP_TO_HOST) != 0) {
      k++;
    }
    int host = k - device;
    while (k < matched && mask(path[k], id) != 0) {
      k++;
    }
    return device | ((long) host << 21) | ((long) (k - device - host) << 42);
  }

  /**
   * Fills the overlap of every candidate that has a state in {@code states} (by rank index; the others are left
   * alone). Held depths come from one pass down the path ({@link #heldDepths}); a rank with any block off the device
   * takes the per-rank tier walk.
   */
  static void fillAll(Candidates candidates, RankState[] states, Node[] path, int matched,
      RadixTree.Scratch scratch) {
    int[] depths = heldDepths(candidates, states, path, matched, scratch);
    for (int i = 0; i < candidates.size(); i++) {
      RankState state = states[candidates.rankIndex(i)];
      if (state == null) {
        continue;
      }
      if (state.entriesWithoutDevice == 0) {
        candidates.setOverlap(i, depths[i], 0, 0);
      } else {
        fill(candidates, i, path, matched, state);
      }
    }
  }

  /**
   * Every candidate's held depth in one pass down the path. A rank's blocks are prefix-closed, so the ranks on each
   * path node are a subset of those on its parent: an entries array as long as its parent's holds the same ranks, and
   * where it is shorter, each rank that dropped out is found by a binary search for the first position where the two
   * id-sorted arrays disagree. The cost is one comparison per node plus O(log ranks) per rank that drops out, not a
   * scan per candidate. Candidates without a state get depth 0. Under a concurrent write the arrays may not nest;
   * the search still ends (at most one drop per missing entry) and only that lookup's depths can be off.
   */
  static int[] heldDepths(Candidates candidates, RankState[] states, Node[] path, int matched,
      RadixTree.Scratch scratch) {
    int n = candidates.size();
    long[] alive = scratch.keys(n);
    int[] depths = scratch.depths(n);
    int m = 0;
    for (int i = 0; i < n; i++) {
      RankState state = states[candidates.rankIndex(i)];
      depths[i] = 0;
      if (state != null) {
        depths[i] = -1; // still in
        alive[m++] = ((long) state.id << 32) | i;
      }
    }
    if (m == 0 || matched == 0) {
      return finish(depths, n, matched);
    }
    java.util.Arrays.sort(alive, 0, m);
    // depth 0: candidates missing from the first node never matched
    long[] previous = path[0].entries();
    int e = 0;
    for (int a = 0; a < m; a++) {
      int id = (int) (alive[a] >>> 32);
      while (e < previous.length && Node.idAt(previous, e) < id) {
        e++;
      }
      if (e >= previous.length || Node.idAt(previous, e) != id) {
        depths[(int) alive[a]] = 0;
      }
    }
    for (int k = 1; k < matched; k++) {
      long[] current = path[k].entries();
      int drops = previous.length - current.length;
      int from = 0;
      int offset = 0;
      while (drops > 0 && from < previous.length) {
        int dropped = firstMismatch(previous, current, from, offset);
        if (dropped >= previous.length) {
          break;
        }
        markDropped(alive, m, depths, Node.idAt(previous, dropped), k);
        offset++;
        drops--;
        from = dropped + 1;
      }
      previous = current;
    }
    return finish(depths, n, matched);
  }

  /** Candidates still in after the last node hold the whole matched path. */
  private static int[] finish(int[] depths, int n, int matched) {
    for (int i = 0; i < n; i++) {
      if (depths[i] < 0) {
        depths[i] = matched;
      }
    }
    return depths;
  }

  /**
   * The first position p ≥ from where previous[p] has no counterpart at current[p − offset] (offset = ranks already
   * found dropped before {@code from}); previous.length when there is none.
   */
  private static int firstMismatch(long[] previous, long[] current, int from, int offset) {
    int low = from;
    int high = previous.length;
    while (low < high) {
      int mid = (low + high) >>> 1;
      int at = mid - offset;
      if (at >= 0 && at < current.length && Node.idAt(current, at) == Node.idAt(previous, mid)) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  }

  /** If rank {@code id} is a candidate still in, it drops out at depth {@code k}. */
  private static void markDropped(long[] alive, int m, int[] depths, int id, int k) {
    int low = 0;
    int high = m - 1;
    while (low <= high) {
      int mid = (low + high) >>> 1;
      int candidateId = (int) (alive[mid] >>> 32);
      if (candidateId < id) {
        low = mid + 1;
      } else if (candidateId > id) {
        high = mid - 1;
      } else {
        int candidate = (int) alive[mid];
        if (depths[candidate] < 0) {
          depths[candidate] = k;
        }
        return;
      }
    }
  }

  /** How many leading nodes of the path hold {@code id} (a rank's blocks are prefix-closed). */
  static int heldDepth(Node[] path, int matched, int id) {
    return PrefixClosed.heldDepth(matched, k -> Node.payload(path[k].entries(), id) > 0);
  }

  static void fill(Candidates candidates, int i, Node[] path, int matched, RankState state) {
    long p = packed(path, matched, state);
    candidates.setOverlap(i, (int) (p & 0x1FFFFF), (int) ((p >>> 21) & 0x1FFFFF), (int) (p >>> 42));
  }

  private static long mask(Node node, int id) {
    long payload = Node.payload(node.entries(), id);
    return payload < 0 ? 0 : payload;
  }

  /** One rank's tiered overlap with a request (allocates; for diagnostics and tests, not the selection path). */
  public TieredOverlap overlap(Rank rank, long[] sequenceHashes) {
    RankState state = tree.state(rank);
    if (state == null) {
      return TieredOverlap.NONE;
    }
    Node[] path = new Node[sequenceHashes.length];
    int matched = tree.walk(sequenceHashes, sequenceHashes.length, path);
    return tiered(path, matched, state);
  }

  /** Every rank with a non-empty overlap (allocates; for diagnostics and tests). */
  public Map<Rank, TieredOverlap> overlaps(long[] sequenceHashes) {
    Node[] path = new Node[sequenceHashes.length];
    int matched = tree.walk(sequenceHashes, sequenceHashes.length, path);
    Map<Rank, TieredOverlap> out = new TreeMap<>();
    for (RankState state : tree.ranks.values()) {
      TieredOverlap overlap = tiered(path, matched, state);
      if (overlap.total() > 0) {
        out.put(state.rank, overlap);
      }
    }
    return out;
  }

  private static TieredOverlap tiered(Node[] path, int matched, RankState state) {
    long p = packed(path, matched, state);
    return new TieredOverlap((int) (p & 0x1FFFFF), (int) ((p >>> 21) & 0x1FFFFF), (int) (p >>> 42));
  }

  RadixTree tree() {
    return tree;
  }

  // ---------------------------------------------------------------- stats

  /** Event-id gaps seen (each cleared its rank). */
  public long gapCount() {
    return gapCount;
  }

  /** Stored events dropped because their parent block was unknown for the rank. */
  public long droppedStoreCount() {
    return droppedStoreCount;
  }

  /** Blocks of Stored events not stored because their rank already held its {@code maxBlocks}. */
  public long overCapacityBlockCount() {
    return overCapacityBlockCount;
  }

  /** Tree nodes (distinct cached blocks, by tokens hash path). */
  public int blockCount() {
    return tree.nodeCount();
  }

  /** (block, rank) entries. */
  public long entryCount() {
    return tree.entryCount();
  }

  /** Ranks the index has seen events for. */
  public int rankCount() {
    return tree.ranks.size();
  }
}
