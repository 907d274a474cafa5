package io.kvrouter.engines.events;

import io.kvrouter.core.hashing.BlockHasher;
import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.StorageTier;
import it.unimi.dsi.fastutil.ints.IntOpenHashSet;
import java.util.Arrays;
import java.util.List;

/**
 * Turns one rank's engine events into the router's {@link KvEvent}s: the tokens hash of every stored block computed
 * from its {@code token_ids} with the router's own {@link BlockHasher} (seeded by the chain's cache salt and LoRA name
 * as a request's would be), so the engine's hash function never has to match the router's.
 *
 * <ul>
 *   <li>A Stored chain continues its parent's: the parent's tokens hash and seed come from {@link BlockMemo}; an
 *       unknown parent drops the event (counted), as the index would.</li>
 *   <li>Only the full-attention KV cache group is indexed: the group named by a Stored event's
 *       {@code kv_cache_spec_kind} (full_attention, mla_attention, sink_full_attention), or group 0 while no kind was
 *       published; events of other groups are skipped (counted).</li>
 *   <li>A Stored without tokens (vLLM's offloaded copy on {@code medium} CPU) takes the tokens hashes the rank already
 *       holds for those blocks.</li>
 *   <li>{@code medium} maps to the router's tiers ({@link Media}).</li>
 * </ul>
 *
 * <p>Single-threaded (the rank's connector thread); {@link #counters()} is safe from any thread.
 */
public final class RankTranslator {
  private final int blockSize;
  private final BlockMemo memo;
  private int fullGroup = -1;
  private final IntOpenHashSet otherGroups = new IntOpenHashSet();
  private long[] hashBuffer = new long[64];

  private volatile long storedBlocks;
  private volatile long removedBlocks;
  private volatile long engineClears;
  private volatile long unknownParentBlocks;
  private volatile long unhashableBlocks;
  private volatile long loraWithoutNameBlocks;
  private volatile long mismatchedBlocks;
  private volatile long overCapacityBlocks;
  private volatile long otherGroupEvents;
  private volatile long unknownMediumEvents;
  private volatile long unknownTypeEvents;

  /**
   * @param blockSize the block size the worker is registered with (requests are hashed with it)
   * @param maxBlocks at most this many blocks are kept for the rank (the index's bound)
   */
  public RankTranslator(int blockSize, int maxBlocks) {
    this.blockSize = blockSize;
    this.memo = new BlockMemo(maxBlocks);
  }

  /** Translates one event, appending what the index should apply to {@code out}. */
  public void translate(EngineEvent event, List<KvEvent> out) {
    if (event instanceof EngineEvent.Stored stored) {
      stored(stored, out);
    } else if (event instanceof EngineEvent.Removed removed) {
      removed(removed, out);
    } else if (event instanceof EngineEvent.Cleared) {
      memo.clear();
      engineClears++;
      out.add(KvEvent.Cleared.INSTANCE);
    } else if (event instanceof EngineEvent.Unknown) {
      unknownTypeEvents++;
    }
  }

  /**
   * Learns the blocks an event stores or removes without passing anything on or counting it: a batch the index
   * already applied, read again so a connector that took over knows which blocks the rank holds.
   */
  public void learn(EngineEvent event) {
    TranslationCounters before = counters();
    translate(event, new java.util.ArrayList<>());
    restore(before);
  }

  private void restore(TranslationCounters c) {
    storedBlocks = c.storedBlocks();
    removedBlocks = c.removedBlocks();
    engineClears = c.engineClears();
    unknownParentBlocks = c.unknownParentBlocks();
    unhashableBlocks = c.unhashableBlocks();
    loraWithoutNameBlocks = c.loraWithoutNameBlocks();
    mismatchedBlocks = c.mismatchedBlocks();
    overCapacityBlocks = c.overCapacityBlocks();
    otherGroupEvents = c.otherGroupEvents();
    unknownMediumEvents = c.unknownMediumEvents();
    unknownTypeEvents = c.unknownTypeEvents();
  }

  /** Forgets what the rank holds (the connector cleared the rank: a gap it could not replay, a new engine). */
  public void reset() {
    memo.clear();
  }

  /** Blocks the rank holds as far as the connector knows (bounded by the capacity). */
  public int heldBlocks() {
    return memo.size();
  }

  public int capacity() {
    return memo.capacity();
  }

  public TranslationCounters counters() {
    return new TranslationCounters(storedBlocks, removedBlocks, engineClears, unknownParentBlocks, unhashableBlocks,
        loraWithoutNameBlocks, mismatchedBlocks, overCapacityBlocks, otherGroupEvents, unknownMediumEvents,
        unknownTypeEvents);
  }

  private void stored(EngineEvent.Stored e, List<KvEvent> out) {
    StorageTier tier = Media.tier(e.medium());
    if (tier == null) {
      unknownMediumEvents++;
      return;
    }
    if (!storedGroupIndexed(e.groupIdx() == null ? 0 : e.groupIdx(), e.specKind())) {
      otherGroupEvents++;
      return;
    }
    int n = e.blockHashes().length;
    if (n == 0) {
      return;
    }
    if (e.loraId() != null && e.loraName() == null) {
      loraWithoutNameBlocks += n;
      return;
    }
    long parentTokensHash = 0;
    long seed;
    if (e.parentBlockHash() != null) {
      int parent = memo.slot(e.parentBlockHash());
      if (parent < 0) {
        unknownParentBlocks += n;
        return;
      }
      parentTokensHash = memo.tokensHash(parent);
      seed = memo.seed(parent);
    } else {
      seed = BlockHasher.seed(e.cacheSalt(), e.loraName());
    }
    int usable = e.firstUnhashableBlock() >= 0 ? e.firstUnhashableBlock() : n;
    unhashableBlocks += n - usable;
    if (usable == 0) {
      return;
    }
    long[] tokensHashes = buffer(usable);
    if (e.tokenCount() == 0) {
      // an offloaded copy: the blocks' identities are the ones the rank already holds
      for (int i = 0; i < usable; i++) {
        int slot = memo.slot(e.blockHashes()[i]);
        if (slot < 0) {
          mismatchedBlocks += usable - i;
          usable = i;
          break;
        }
        tokensHashes[i] = memo.tokensHash(slot);
      }
    } else if (e.blockSize() != blockSize || (long) e.tokenCount() != (long) n * e.blockSize()) {
      mismatchedBlocks += usable;
      return;
    } else {
      BlockHasher.localBlockHashes(e.tokenIds(), usable * blockSize, blockSize, seed, tokensHashes);
      if (e.parentBlockHash() != null) {
        tokensHashes[0] = BlockHasher.nextSequenceHash(parentTokensHash, tokensHashes[0], seed);
      }
      BlockHasher.chainInPlace(tokensHashes, usable, seed);
    }
    int bit = 1 << tier.ordinal();
    for (int i = 0; i < usable; i++) {
      if (!memo.put(e.blockHashes()[i], tokensHashes[i], seed, bit)) {
        overCapacityBlocks += usable - i;
        usable = i;
        break;
      }
    }
    if (usable == 0) {
      return;
    }
    storedBlocks += usable;
    out.add(new KvEvent.Stored(tier, e.parentBlockHash(), Arrays.copyOf(e.blockHashes(), usable),
        Arrays.copyOf(tokensHashes, usable)));
  }

  private void removed(EngineEvent.Removed e, List<KvEvent> out) {
    StorageTier tier = Media.tier(e.medium());
    if (tier == null) {
      unknownMediumEvents++;
      return;
    }
    if (!removedGroupIndexed(e.groupIdx() == null ? 0 : e.groupIdx())) {
      otherGroupEvents++;
      return;
    }
    int bit = 1 << tier.ordinal();
    long[] held = new long[e.blockHashes().length];
    int count = 0;
    for (long hash : e.blockHashes()) {
      if (memo.remove(hash, bit)) {
        held[count++] = hash;
      }
    }
    if (count > 0) {
      removedBlocks += count;
      out.add(new KvEvent.Removed(tier, count == held.length ? held : Arrays.copyOf(held, count)));
    }
  }

  private boolean storedGroupIndexed(int group, String kind) {
    if (kind != null) {
      if (!isFullAttention(kind)) {
        otherGroups.add(group);
        return false;
      }
      if (fullGroup < 0) {
        fullGroup = group;
      }
      return group == fullGroup;
    }
    return fullGroup < 0 ? group == 0 && !otherGroups.contains(group) : group == fullGroup;
  }

  private boolean removedGroupIndexed(int group) {
    return fullGroup < 0 ? group == 0 && !otherGroups.contains(group) : group == fullGroup;
  }

  static boolean isFullAttention(String kind) {
    return kind.equals("full_attention") || kind.equals("mla_attention") || kind.equals("sink_full_attention");
  }

  private long[] buffer(int size) {
    if (hashBuffer.length < size) {
      hashBuffer = new long[Math.max(size, hashBuffer.length * 2)];
    }
    return hashBuffer;
  }
}
