package io.kvrouter.core.hashing;

import io.kvrouter.core.error.RoutingError;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReferenceArray;
import net.openhft.hashing.LongHashFunction;

/**
 * The router's block hashing (docs/architecture.md, "Block hashing"). Engines publish KV events keyed by hashes of
 * their own, so the router must derive, from the request's tokens alone, the same chain of block identities the index
 * is navigated by:
 *
 * <ul>
 *   <li>seed: {@value #BASE_SEED}, or, when {@code cache_salt} or {@code lora_name} is non-empty,
 *       XXH3-64(utf8(cache_salt) ‖ 0x00 ‖ utf8(lora_name), seed 1337) — so two tenants (salts) or two adapters never
 *       share cache entries, and the 0x00 separator keeps ("ab", "") and ("a", "b") apart;</li>
 *   <li>local hash of a block: XXH3-64 over its tokens as little-endian u32, with that seed;</li>
 *   <li>sequence hash: {@code seq[0] = local[0]}, {@code seq[i] = XXH3-64(le64(seq[i-1]) ‖ le64(local[i]))} with the
 *       same seed — a block's identity depends on its whole prefix, which is what a prefix cache can reuse;</li>
 *   <li>the trailing partial block is not hashed: engines only cache full blocks.</li>
 * </ul>
 *
 * <p>Hashing reads the {@code int[]} directly (no per-block byte buffer): zero-allocation-hashing hashes an array's
 * memory in native byte order, which is the little-endian u32/u64 layout the spec asks for on every platform we run
 * on; on a big-endian JVM the tokens are byte-swapped into a thread-local buffer first. The vectors in
 * {@code src/test/resources/hashing} (produced by an independent XXH3) pin the result.
 *
 * <p>All methods are thread-safe and static; seeded hash functions (each carries a 192-byte derived secret) are
 * cached in a small direct-mapped table so a request with a salt does not rebuild one.
 */
public final class BlockHasher {
  /** The seed used when neither a cache salt nor a LoRA name is given. */
  public static final long BASE_SEED = 1337L;

  private static final LongHashFunction BASE = LongHashFunction.xx3(BASE_SEED);
  private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
  private static final int CACHE_SIZE = 256;
  private static final AtomicReferenceArray<Seeded> CACHE = new AtomicReferenceArray<>(CACHE_SIZE);
  private static final ThreadLocal<int[]> SWAP = ThreadLocal.withInitial(() -> new int[64]);

  private record Seeded(long seed, LongHashFunction function) {}

  private BlockHasher() {}

  /**
   * The hash seed for a request; empty and {@code null} strings count as absent, and with both absent the seed is
   * {@link #BASE_SEED}.
   */
  public static long seed(String cacheSalt, String loraName) {
    boolean noSalt = cacheSalt == null || cacheSalt.isEmpty();
    boolean noLora = loraName == null || loraName.isEmpty();
    if (noSalt && noLora) {
      return BASE_SEED;
    }
    byte[] salt = noSalt ? new byte[0] : cacheSalt.getBytes(StandardCharsets.UTF_8);
    byte[] lora = noLora ? new byte[0] : loraName.getBytes(StandardCharsets.UTF_8);
    byte[] input = new byte[salt.length + 1 + lora.length];
    System.arraycopy(salt, 0, input, 0, salt.length);
    input[salt.length] = 0;
    System.arraycopy(lora, 0, input, salt.length + 1, lora.length);
    return BASE.hashBytes(input);
  }

  /** Number of full blocks in {@code tokenCount} tokens, i.e. how many hashes the other methods produce. */
  public static int blockCount(int tokenCount, int blockSize) {
    checkBlockSize(blockSize);
    if (tokenCount < 0) {
      throw new IllegalArgumentException("negative token count " + tokenCount);
    }
    return tokenCount / blockSize;
  }

  /** Local (prefix-independent) hashes of every full block of {@code tokens}. */
  public static long[] localBlockHashes(int[] tokens, int blockSize, long seed) {
    return localBlockHashes(tokens, tokens.length, blockSize, seed);
  }

  /** As {@link #localBlockHashes(int[], int, long)} over the first {@code tokenCount} entries of a reusable buffer. */
  public static long[] localBlockHashes(int[] tokens, int tokenCount, int blockSize, long seed) {
    long[] out = new long[blockCount(checkCount(tokens, tokenCount), blockSize)];
    localBlockHashes(tokens, tokenCount, blockSize, seed, out);
    return out;
  }

  /**
   * Writes the local hashes of the full blocks of {@code tokens[0, tokenCount)} into {@code out} (which must hold
   * {@link #blockCount} entries) and returns how many were written; allocation-free.
   */
  public static int localBlockHashes(int[] tokens, int tokenCount, int blockSize, long seed, long[] out) {
    int blocks = blockCount(checkCount(tokens, tokenCount), blockSize);
    checkOut(out, blocks);
    LongHashFunction function = function(seed);
    for (int b = 0; b < blocks; b++) {
      out[b] = hashBlock(function, tokens, b * blockSize, blockSize);
    }
    return blocks;
  }

  /** Sequence (prefix-chained) hashes of every full block of {@code tokens}: what the KV index is navigated by. */
  public static long[] sequenceHashes(int[] tokens, int blockSize, long seed) {
    return sequenceHashes(tokens, tokens.length, blockSize, seed);
  }

  /** As {@link #sequenceHashes(int[], int, long)} over the first {@code tokenCount} entries of a reusable buffer. */
  public static long[] sequenceHashes(int[] tokens, int tokenCount, int blockSize, long seed) {
    long[] out = new long[blockCount(checkCount(tokens, tokenCount), blockSize)];
    sequenceHashes(tokens, tokenCount, blockSize, seed, out);
    return out;
  }

  /**
   * Writes the sequence hashes of the full blocks of {@code tokens[0, tokenCount)} into {@code out} and returns how
   * many were written; allocation-free apart from the first use of a new seed.
   */
  public static int sequenceHashes(int[] tokens, int tokenCount, int blockSize, long seed, long[] out) {
    int blocks = blockCount(checkCount(tokens, tokenCount), blockSize);
    checkOut(out, blocks);
    LongHashFunction function = function(seed);
    for (int b = 0; b < blocks; b++) {
      out[b] = hashBlock(function, tokens, b * blockSize, blockSize);
    }
    chainInPlace(function, out, blocks);
    return blocks;
  }

  /**
   * Sequence hashes from already computed local hashes: a RouteRequest may carry {@code block_hashes} (the salted
   * local hash of each full block) instead of tokens, and the router chains them itself.
   */
  public static long[] sequenceHashesFromLocal(long[] localHashes, long seed) {
    long[] out = localHashes.clone();
    chainInPlace(function(seed), out, out.length);
    return out;
  }

  /**
   * Turns the local hashes in {@code hashes[0, count)} into sequence hashes in place: {@code hashes[i-1]} already
   * holds the previous sequence hash when step i hashes the 16 bytes {@code hashes[i-1, i+1)}, so the chain reads
   * its input straight from the array, with no per-step buffer.
   */
  public static void chainInPlace(long[] hashes, int count, long seed) {
    chainInPlace(function(seed), hashes, count);
  }

  private static void chainInPlace(LongHashFunction function, long[] hashes, int count) {
    if (count > hashes.length) {
      throw new IllegalArgumentException("count " + count + " exceeds the " + hashes.length + " hashes given");
    }
    if (!LITTLE_ENDIAN) {
      for (int b = 1; b < count; b++) {
        hashes[b] = chain(function, hashes[b - 1], hashes[b]);
      }
      return;
    }
    for (int b = 1; b < count; b++) {
      // native order is little-endian: the two adjacent longs are le64(previous) ‖ le64(local)
      hashes[b] = function.hashLongs(hashes, b - 1, 2);
    }
  }

  /** One chaining step: XXH3-64(le64(previous) ‖ le64(local)). */
  public static long nextSequenceHash(long previous, long local, long seed) {
    return chain(function(seed), previous, local);
  }

  private static long chain(LongHashFunction function, long previous, long local) {
    // hashLong would hash 8 bytes; the spec wants the 16-byte concatenation. Two longs hashed as one 16-byte input,
    // byte-swapped first where the native order is not little-endian.
    long first = LITTLE_ENDIAN ? previous : Long.reverseBytes(previous);
    long second = LITTLE_ENDIAN ? local : Long.reverseBytes(local);
    return function.hashLongs(pair(first, second));
  }

  private static final ThreadLocal<long[]> PAIR = ThreadLocal.withInitial(() -> new long[2]);

  private static long[] pair(long first, long second) {
    long[] pair = PAIR.get();
    pair[0] = first;
    pair[1] = second;
    return pair;
  }

  private static long hashBlock(LongHashFunction function, int[] tokens, int offset, int length) {
    if (LITTLE_ENDIAN) {
      return function.hashInts(tokens, offset, length);
    }
    int[] swapped = SWAP.get();
    if (swapped.length < length) {
      swapped = new int[length];
      SWAP.set(swapped);
    }
    for (int i = 0; i < length; i++) {
      swapped[i] = Integer.reverseBytes(tokens[offset + i]);
    }
    return function.hashInts(swapped, 0, length);
  }

  private static LongHashFunction function(long seed) {
    if (seed == BASE_SEED) {
      return BASE;
    }
    int slot = (int) ((seed * 0x9E3779B97F4A7C15L) >>> 56) & (CACHE_SIZE - 1);
    Seeded cached = CACHE.get(slot);
    if (cached != null && cached.seed == seed) {
      return cached.function;
    }
    LongHashFunction function = LongHashFunction.xx3(seed);
    CACHE.set(slot, new Seeded(seed, function));
    return function;
  }

  private static void checkBlockSize(int blockSize) {
    if (blockSize <= 0) {
      throw RoutingError.invalid(RoutingError.INVALID_BLOCK_SIZE, "block size must be positive, got " + blockSize)
          .toException();
    }
  }

  private static int checkCount(int[] tokens, int tokenCount) {
    if (tokenCount < 0 || tokenCount > tokens.length) {
      throw new IllegalArgumentException("token count " + tokenCount + " outside buffer of " + tokens.length);
    }
    return tokenCount;
  }

  private static void checkOut(long[] out, int blocks) {
    if (out.length < blocks) {
      throw new IllegalArgumentException("output holds " + out.length + " hashes, need " + blocks);
    }
  }
}
