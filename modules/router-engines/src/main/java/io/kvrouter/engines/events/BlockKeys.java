package io.kvrouter.engines.events;

import net.openhft.hashing.LongHashFunction;

/**
 * How an engine's block hash becomes the {@code long} block id the router's index keys blocks by. The index uses it
 * only to find a block again (a Removed, a parent link), never to match requests, so the key only has to be
 * deterministic and collision-free in practice:
 *
 * <ul>
 *   <li>an integer hash (vLLM with {@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES}, SGLang's signed int64s) is its
 *       64-bit two's-complement value: an unsigned value at or above 2^63 becomes a negative long, bijectively;</li>
 *   <li>a bytes hash (vLLM's default: a 32-byte SHA-256, or xxHash-128 digests) is XXH3-64 of all its bytes, seed 0.
 *       Two distinct digests collide with probability 2^-64 per pair (about 3·10^-6 for 10^7 cached blocks on one
 *       rank); hashing the whole digest, not truncating it, keeps that true for byte strings that are not uniformly
 *       random too.</li>
 * </ul>
 * An engine publishes one form consistently (the choice is a process-wide setting), so the two ranges never meet.
 */
public final class BlockKeys {
  private static final LongHashFunction BYTES = LongHashFunction.xx3(0);

  private BlockKeys() {}

  /** The key of a bytes hash {@code bytes[offset, offset + length)}. */
  public static long ofBytes(byte[] bytes, int offset, int length) {
    return BYTES.hashBytes(bytes, offset, length);
  }
}
