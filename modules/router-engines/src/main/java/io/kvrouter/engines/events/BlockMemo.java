package io.kvrouter.engines.events;

import it.unimi.dsi.fastutil.ints.IntArrayList;
import it.unimi.dsi.fastutil.longs.Long2IntOpenHashMap;
import java.util.Arrays;

/**
 * What one rank of an engine holds, as the connector needs it to translate events: per engine block key, the
 * router's tokens (sequence) hash of the block, the hash seed of its chain (so a child stored later chains with the
 * same LoRA and salt) and the tiers holding it. A child's tokens hash chains from its parent's, and vLLM's offloaded
 * copies ({@code medium} CPU) arrive without tokens, so both are looked up here.
 *
 * <p>It follows the engine's cache, not the index: an entry goes when the engine removes the block from its last
 * tier, or on a clear. Bounded: at most {@code capacity} entries (the rank's index bound); past it new blocks are not
 * kept. Slots live in parallel primitive arrays (about 45 bytes per entry with the map).
 */
final class BlockMemo {
  private final int capacity;
  private final Long2IntOpenHashMap slots = new Long2IntOpenHashMap();
  private final IntArrayList free = new IntArrayList();
  private long[] tokensHashes = new long[64];
  private long[] seeds = new long[64];
  private byte[] tiers = new byte[64];
  private int used;

  BlockMemo(int capacity) {
    this.capacity = capacity;
    slots.defaultReturnValue(-1);
  }

  int size() {
    return slots.size();
  }

  int capacity() {
    return capacity;
  }

  boolean contains(long blockKey) {
    return slots.containsKey(blockKey);
  }

  /** The slot of a block, or -1. */
  int slot(long blockKey) {
    return slots.get(blockKey);
  }

  long tokensHash(int slot) {
    return tokensHashes[slot];
  }

  long seed(int slot) {
    return seeds[slot];
  }

  /**
   * Records that {@code tierBit} holds the block; returns false (nothing kept) when the block is new and the memo is
   * full.
   */
  boolean put(long blockKey, long tokensHash, long seed, int tierBit) {
    int slot = slots.get(blockKey);
    if (slot >= 0) {
      tiers[slot] |= (byte) tierBit;
      return true;
    }
    if (slots.size() >= capacity) {
      return false;
    }
    slot = free.isEmpty() ? used++ : free.popInt();
    if (slot >= tokensHashes.length) {
      int grown = (int) Math.min((long) tokensHashes.length * 2, Integer.MAX_VALUE - 8);
      tokensHashes = Arrays.copyOf(tokensHashes, grown);
      seeds = Arrays.copyOf(seeds, grown);
      tiers = Arrays.copyOf(tiers, grown);
    }
    tokensHashes[slot] = tokensHash;
    seeds[slot] = seed;
    tiers[slot] = (byte) tierBit;
    slots.put(blockKey, slot);
    return true;
  }

  /** The tier no longer holds the block; returns whether the block was known. */
  boolean remove(long blockKey, int tierBit) {
    int slot = slots.get(blockKey);
    if (slot < 0) {
      return false;
    }
    tiers[slot] &= (byte) ~tierBit;
    if (tiers[slot] == 0) {
      slots.remove(blockKey);
      free.push(slot);
    }
    return true;
  }

  void clear() {
    slots.clear();
    free.clear();
    used = 0;
    if (tokensHashes.length > 4096) {
      tokensHashes = new long[64];
      seeds = new long[64];
      tiers = new byte[64];
    }
  }
}
