package io.kvrouter.sim.engine;

import io.kvrouter.core.selection.RequestLimits;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The KV block cache of one engine rank: a fixed number of blocks, each either free, private to a running request
 * (reserved, not yet filled), or cached under the sequence hash of the tokens it holds (prefix reuse). A cached block
 * that no running request references can be evicted, least recently used first.
 *
 * <p>Release stamps a request's blocks deepest first, so a block is always stamped before its parent and the least
 * recently used unreferenced block is always a leaf: the cache stays prefix-closed (no block without its parent),
 * which is what the router's index assumes of a rank's blocks.
 *
 * <p>Every change a router must know is recorded as a numbered {@link KvCacheEvent} (one gap-free id sequence per
 * rank), drained by {@link #drainEvents()}. An event names at most {@link #MAX_BLOCKS_PER_EVENT} blocks: longer runs
 * become several events (a stored run chained through its parents), so every event fits one router batch.
 */
public final class KvBlockCache {
  /** The router's limit of block hashes per KV event batch (README "Limits"). */
  public static final int MAX_BLOCKS_PER_EVENT = RequestLimits.MAX_KV_BLOCKS_PER_BATCH;

  private static final class Block {
    final long tokensHash;
    final long blockId;
    final Block parent;
    int refs;
    long stamp;

    Block(long tokensHash, long blockId, Block parent) {
      this.tokensHash = tokensHash;
      this.blockId = blockId;
      this.parent = parent;
    }
  }

  /** The blocks one admitted request holds: its cached blocks in sequence order and its private reservation. */
  public static final class Holding {
    private final List<Block> blocks = new ArrayList<>();
    private int privateBlocks;
    private final int hitBlocks;

    private Holding(int hitBlocks) {
      this.hitBlocks = hitBlocks;
    }

    /** Leading prompt blocks that were already cached at admission. */
    public int hitBlocks() {
      return hitBlocks;
    }

    /** Blocks of the sequence now cached (hit or stored since). */
    public int cachedBlocks() {
      return blocks.size();
    }
  }

  private final int capacity;
  private final long blockIdSalt;
  private final Map<Long, Block> cached = new HashMap<>();
  private final TreeMap<Long, Block> evictable = new TreeMap<>();
  private final List<KvCacheEvent> events = new ArrayList<>();
  private int privateBlocks;
  private long clock;
  private long nextEventId = 1;

  /**
   * @param capacity blocks this rank holds
   * @param blockIdSalt mixed into the engine's own block ids, which the router uses only as ids
   *     (docs/architecture.md, "The KV index and KV events")
   */
  public KvBlockCache(int capacity, long blockIdSalt) {
    if (capacity <= 0) {
      throw new IllegalArgumentException("capacity must be positive, got " + capacity);
    }
    this.capacity = capacity;
    this.blockIdSalt = blockIdSalt;
  }

  public int capacity() {
    return capacity;
  }

  /** Blocks neither cached nor reserved. */
  public int freeBlocks() {
    return capacity - cached.size() - privateBlocks;
  }

  /** Blocks obtainable now: free ones plus cached ones nobody references. */
  public int availableBlocks() {
    return freeBlocks() + evictable.size();
  }

  /** Blocks in use by running requests: private reservations plus referenced cached blocks. */
  public int activeBlocks() {
    return privateBlocks + cached.size() - evictable.size();
  }

  /** The engine's id for a tokens hash (stable, salted per engine). */
  long blockId(long tokensHash) {
    long z = tokensHash ^ blockIdSalt;
    z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
    return z ^ (z >>> 29);
  }

  /** Leading blocks of {@code hashes[0, limit)} that are cached. */
  public int cachedPrefix(long[] hashes, int limit) {
    int n = 0;
    while (n < limit && cached.containsKey(hashes[n])) {
      n++;
    }
    return n;
  }

  /**
   * Admits a request whose sequence needs {@code totalBlocks} blocks: references the cached leading blocks of
   * {@code hashes[0, hitLimit)} and reserves the rest, evicting LRU blocks as needed, provided at least
   * {@code watermark} blocks stay obtainable afterwards. Returns null (and changes nothing) when they would not.
   */
  public Holding admit(long[] hashes, int hitLimit, int totalBlocks, int watermark) {
    int hits = cachedPrefix(hashes, hitLimit);
    int hitsEvictable = 0;
    for (int i = 0; i < hits; i++) {
      if (cached.get(hashes[i]).refs == 0) {
        hitsEvictable++;
      }
    }
    int needed = totalBlocks - hits;
    if (availableBlocks() - hitsEvictable - needed < watermark) {
      return null;
    }
    Holding holding = new Holding(hits);
    for (int i = 0; i < hits; i++) {
      Block block = cached.get(hashes[i]);
      reference(block);
      holding.blocks.add(block);
    }
    reserve(needed);
    holding.privateBlocks = needed;
    return holding;
  }

  /**
   * The request has computed the blocks {@code hashes[holding.cachedBlocks(), upTo)}: each private block becomes a
   * cached one (or, if another request stored the same tokens meanwhile, the request shares that block and its own
   * is freed). Publishes the new blocks as Stored events, one per chain of consecutive new blocks.
   */
  public void store(Holding holding, long[] hashes, int upTo) {
    store(holding, hashes, null, 0, upTo);
  }

  /**
   * As {@link #store(Holding, long[], int)}, with the request's whole token sequence ({@code blockSize} tokens per
   * block), which the Stored events then carry.
   */
  public void store(Holding holding, long[] hashes, int[] tokens, int blockSize, int upTo) {
    List<Block> run = new ArrayList<>();
    int runStart = 0;
    for (int i = holding.blocks.size(); i < upTo; i++) {
      if (holding.privateBlocks == 0) {
        throw new IllegalStateException("request stores more blocks than it reserved");
      }
      holding.privateBlocks--;
      privateBlocks--;
      Block existing = cached.get(hashes[i]);
      if (existing != null) {
        publishStored(run, tokens, runStart, blockSize);
        run = new ArrayList<>();
        reference(existing);
        holding.blocks.add(existing);
        continue;
      }
      if (run.size() == MAX_BLOCKS_PER_EVENT) {
        publishStored(run, tokens, runStart, blockSize);
        run = new ArrayList<>();
      }
      if (run.isEmpty()) {
        runStart = i;
      }
      Block parent = i == 0 ? null : holding.blocks.get(i - 1);
      Block block = new Block(hashes[i], blockId(hashes[i]), parent);
      block.refs = 1;
      cached.put(block.tokensHash, block);
      holding.blocks.add(block);
      run.add(block);
    }
    publishStored(run, tokens, runStart, blockSize);
  }

  /** The request is done: its cached blocks become evictable once unreferenced, its reservation is freed. */
  public void release(Holding holding) {
    for (int i = holding.blocks.size() - 1; i >= 0; i--) {
      Block block = holding.blocks.get(i);
      block.stamp = ++clock;
      if (--block.refs == 0) {
        evictable.put(block.stamp, block);
      }
    }
    holding.blocks.clear();
    privateBlocks -= holding.privateBlocks;
    holding.privateBlocks = 0;
  }

  /** Blocks cached (referenced or evictable). */
  public int cachedBlocks() {
    return cached.size();
  }

  /**
   * Drops every cached block nobody references, as vLLM's prefix-cache reset does, and publishes a Cleared event.
   * Refused (false, nothing changes) while any block is referenced or reserved: vLLM refuses a reset while requests
   * run.
   */
  public boolean resetPrefixCache() {
    if (privateBlocks > 0 || evictable.size() != cached.size()) {
      return false;
    }
    cached.clear();
    evictable.clear();
    events.add(new KvCacheEvent.Cleared(nextEventId++));
    return true;
  }

  /** Numbered events since the last drain, oldest first. */
  public List<KvCacheEvent> drainEvents() {
    List<KvCacheEvent> drained = List.copyOf(events);
    events.clear();
    return drained;
  }

  private void reference(Block block) {
    if (block.refs++ == 0) {
      evictable.remove(block.stamp);
    }
  }

  private void reserve(int blocks) {
    List<Long> removed = new ArrayList<>();
    while (freeBlocks() < blocks) {
      Map.Entry<Long, Block> lru = evictable.pollFirstEntry();
      if (lru == null) {
        throw new IllegalStateException("no block to evict");
      }
      Block victim = lru.getValue();
      cached.remove(victim.tokensHash);
      removed.add(victim.blockId);
    }
    privateBlocks += blocks;
    for (int from = 0; from < removed.size(); from += MAX_BLOCKS_PER_EVENT) {
      long[] ids = removed.subList(from, Math.min(removed.size(), from + MAX_BLOCKS_PER_EVENT)).stream()
          .mapToLong(Long::longValue).toArray();
      events.add(new KvCacheEvent.Removed(nextEventId++, ids));
    }
  }

  private void publishStored(List<Block> run, int[] tokens, int firstBlock, int blockSize) {
    if (run.isEmpty()) {
      return;
    }
    Block first = run.get(0);
    long[] ids = new long[run.size()];
    long[] hashes = new long[run.size()];
    for (int i = 0; i < run.size(); i++) {
      ids[i] = run.get(i).blockId;
      hashes[i] = run.get(i).tokensHash;
    }
    events.add(new KvCacheEvent.Stored(nextEventId++, first.parent == null ? null : first.parent.blockId, ids,
        hashes, tokens, firstBlock, blockSize));
  }
}
