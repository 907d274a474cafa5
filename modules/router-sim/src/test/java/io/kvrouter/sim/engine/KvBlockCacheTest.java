package io.kvrouter.sim.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class KvBlockCacheTest {
  private static final long[] A = {11, 12, 13, 14};
  private static final long[] B = {21, 22, 23};

  private static boolean cached(KvBlockCache cache, long tokensHash) {
    return cache.cachedPrefix(new long[] {tokensHash}, 1) == 1;
  }

  /** Admits a sequence, computes all of it, releases it: what one finished request leaves behind. */
  private static KvBlockCache.Holding runToCompletion(KvBlockCache cache, long[] hashes) {
    KvBlockCache.Holding holding = cache.admit(hashes, hashes.length, hashes.length, 0);
    assertThat(holding).isNotNull();
    cache.store(holding, hashes, hashes.length);
    cache.release(holding);
    return holding;
  }

  @Test
  void aMissThenAHitOnTheSharedPrefix() {
    KvBlockCache cache = new KvBlockCache(16, 1);
    KvBlockCache.Holding first = runToCompletion(cache, A);
    assertThat(first.hitBlocks()).isZero();

    long[] sharesTwo = {11, 12, 99, 98};
    KvBlockCache.Holding second = cache.admit(sharesTwo, sharesTwo.length, sharesTwo.length, 0);
    assertThat(second.hitBlocks()).isEqualTo(2);
    assertThat(cache.freeBlocks()).isEqualTo(16 - 4 - 2);
  }

  @Test
  void hitsStopAtTheLimit() {
    KvBlockCache cache = new KvBlockCache(16, 1);
    runToCompletion(cache, A);
    KvBlockCache.Holding again = cache.admit(A, 3, A.length, 0);
    assertThat(again.hitBlocks()).isEqualTo(3);
  }

  @Test
  void evictsTheLeastRecentlyUsedUnreferencedBlocksLeavesFirst() {
    KvBlockCache cache = new KvBlockCache(8, 1);
    runToCompletion(cache, A); // 4 blocks, older
    runToCompletion(cache, B); // 3 blocks, newer
    assertThat(cache.freeBlocks()).isEqualTo(1);

    long[] c = {31, 32, 33};
    KvBlockCache.Holding holding = cache.admit(c, c.length, c.length, 0);
    assertThat(holding).isNotNull();
    // two blocks had to go: A's deepest two, not B and not A's prefix
    assertThat(cached(cache, 13)).isFalse();
    assertThat(cached(cache, 14)).isFalse();
    for (long kept : new long[] {11, 12, 21, 22, 23}) {
      assertThat(cached(cache, kept)).as("block %d", kept).isTrue();
    }
    List<KvCacheEvent> events = cache.drainEvents();
    KvCacheEvent.Removed removed = (KvCacheEvent.Removed) events.get(events.size() - 1);
    assertThat(removed.blockIds()).containsExactly(cache.blockId(14), cache.blockId(13));
  }

  @Test
  void aReusedPrefixIsRefreshed() {
    KvBlockCache cache = new KvBlockCache(8, 1);
    runToCompletion(cache, A);
    runToCompletion(cache, B);
    runToCompletion(cache, new long[] {11, 12}); // touches A's prefix: B is now the oldest
    cache.admit(new long[] {41, 42, 43, 44}, 4, 4, 0);
    assertThat(cached(cache, 11)).isTrue();
    assertThat(cached(cache, 12)).isTrue();
    assertThat(cached(cache, 23)).isFalse();
  }

  @Test
  void referencedBlocksAreNeverEvictedAndAdmissionWaitsInstead() {
    KvBlockCache cache = new KvBlockCache(6, 1);
    KvBlockCache.Holding running = cache.admit(A, A.length, A.length, 0);
    cache.store(running, A, A.length);
    assertThat(cache.admit(B, B.length, B.length, 0)).isNull();
    assertThat(cache.freeBlocks()).isEqualTo(2);
    assertThat(cache.admit(new long[] {51}, 1, 1, 1)).isNotNull(); // one block, one to spare: the watermark holds
    assertThat(cache.admit(new long[] {52}, 1, 1, 1)).isNull();
  }

  @Test
  void twoRequestsComputingTheSameBlockShareOneCopy() {
    KvBlockCache cache = new KvBlockCache(16, 1);
    KvBlockCache.Holding first = cache.admit(A, 4, 4, 0);
    KvBlockCache.Holding second = cache.admit(A, 4, 4, 0);
    cache.store(first, A, 4);
    cache.store(second, A, 4);
    assertThat(cache.freeBlocks()).isEqualTo(12);
    assertThat(cache.activeBlocks()).isEqualTo(4);
    cache.release(first);
    cache.release(second);
    assertThat(cache.activeBlocks()).isZero();
  }

  @Test
  void aRequestCannotStoreMoreThanItReserved() {
    KvBlockCache cache = new KvBlockCache(16, 1);
    KvBlockCache.Holding holding = cache.admit(A, 4, 2, 0);
    assertThatThrownBy(() -> cache.store(holding, A, 4)).isInstanceOf(IllegalStateException.class);
  }

  /**
   * Random sequences sharing random prefixes, admitted, stored partly and released in random order under eviction:
   * replaying the published events (by block id, each Stored under its parent) gives exactly the cache's blocks,
   * the ids are gap-free, and no Removed ever names a block with a cached child.
   */
  @Test
  void publishedEventsReplayToExactlyTheCacheContents() {
    Random random = new Random(5);
    KvBlockCache cache = new KvBlockCache(64, 77);
    Map<Long, Long> parentOf = new HashMap<>();
    Set<Long> replayed = new HashSet<>();
    long expectedId = 1;
    List<KvBlockCache.Holding> running = new java.util.ArrayList<>();
    List<long[]> runningHashes = new java.util.ArrayList<>();
    Set<Long> everyHash = new HashSet<>();
    long removedBlocks = 0;
    for (int step = 0; step < 3_000; step++) {
      if (!running.isEmpty() && (random.nextBoolean() || running.size() > 6)) {
        int i = random.nextInt(running.size());
        KvBlockCache.Holding h = running.remove(i);
        long[] hashes = runningHashes.remove(i);
        cache.store(h, hashes, h.cachedBlocks() + random.nextInt(hashes.length - h.cachedBlocks() + 1));
        cache.release(h);
      } else {
        long[] hashes = new long[1 + random.nextInt(10)];
        long chain = random.nextInt(4); // four roots: shared prefixes
        for (int b = 0; b < hashes.length; b++) {
          chain = chain * 31 + (b < 3 ? 0 : random.nextInt(3));
          hashes[b] = chain;
          everyHash.add(chain);
        }
        KvBlockCache.Holding h = cache.admit(hashes, hashes.length, hashes.length, 0);
        if (h != null) {
          running.add(h);
          runningHashes.add(hashes);
        }
      }
      for (KvCacheEvent event : cache.drainEvents()) {
        assertThat(event.eventId()).isEqualTo(expectedId++);
        if (event instanceof KvCacheEvent.Stored stored) {
          Long parent = stored.parentBlockId();
          assertThat(parent == null || replayed.contains(parent)).as("parent is cached").isTrue();
          for (long id : stored.blockIds()) {
            assertThat(replayed.add(id)).isTrue();
            parentOf.put(id, parent);
            parent = id;
          }
        } else if (event instanceof KvCacheEvent.Removed removed) {
          for (long id : removed.blockIds()) {
            removedBlocks++;
            assertThat(replayed.remove(id)).isTrue();
            assertThat(replayed.stream().anyMatch(c -> java.util.Objects.equals(parentOf.get(c), id)))
                .as("a removed block has no cached child").isFalse();
          }
        }
      }
      Set<Long> actual = new HashSet<>();
      for (long hash : everyHash) {
        if (cached(cache, hash)) {
          actual.add(cache.blockId(hash));
        }
      }
      assertThat(replayed).isEqualTo(actual);
    }
    assertThat(removedBlocks).isPositive();
  }

  @Test
  void aRunLongerThanTheBatchLimitIsPublishedAsChainedEventsWithTheirTokens() {
    int blocks = 20_000;
    int blockSize = 2;
    long[] hashes = new long[blocks];
    int[] tokens = new int[blocks * blockSize];
    for (int i = 0; i < blocks; i++) {
      hashes[i] = 1_000_000L + i;
    }
    for (int t = 0; t < tokens.length; t++) {
      tokens[t] = t;
    }
    KvBlockCache cache = new KvBlockCache(2 * blocks, 7);
    KvBlockCache.Holding holding = cache.admit(hashes, blocks, blocks, 0);
    cache.store(holding, hashes, tokens, blockSize, blocks);
    List<KvCacheEvent> stored = cache.drainEvents();

    assertThat(stored).extracting(KvCacheEvent::blockCount).containsExactly(8_192, 8_192, 3_616);
    KvCacheEvent.Stored first = (KvCacheEvent.Stored) stored.get(0);
    KvCacheEvent.Stored second = (KvCacheEvent.Stored) stored.get(1);
    assertThat(first.parentBlockId()).isNull();
    assertThat(second.parentBlockId()).isEqualTo(first.blockIds()[8_191]);
    assertThat(second.tokensHashes()[0]).isEqualTo(hashes[8_192]);
    assertThat(second.tokenIds()).hasSize(8_192 * blockSize).startsWith(8_192 * blockSize, 8_192 * blockSize + 1);
    assertThat(stored).extracting(KvCacheEvent::eventId).containsExactly(1L, 2L, 3L);

    // a request that needs almost the whole cache evicts all 20,000 blocks: removed in events of at most 8,192
    cache.release(holding);
    long[] other = new long[2 * blocks];
    for (int i = 0; i < other.length; i++) {
      other[i] = 5_000_000L + i;
    }
    assertThat(cache.admit(other, other.length, other.length, 0)).isNotNull();
    assertThat(cache.drainEvents()).extracting(KvCacheEvent::blockCount).containsExactly(8_192, 8_192, 3_616);
  }

  @Test
  void aPrefixCacheResetDropsEveryUnreferencedBlockAndIsRefusedWhileARequestHoldsBlocks() {
    KvBlockCache cache = new KvBlockCache(16, 1);
    runToCompletion(cache, A);
    KvBlockCache.Holding running = cache.admit(B, B.length, B.length, 0);
    assertThat(cache.resetPrefixCache()).isFalse();
    assertThat(cached(cache, 11)).isTrue();

    cache.release(running);
    cache.drainEvents();
    assertThat(cache.resetPrefixCache()).isTrue();
    assertThat(cache.cachedBlocks()).isZero();
    assertThat(cache.freeBlocks()).isEqualTo(16);
    assertThat(cache.drainEvents()).singleElement().isInstanceOf(KvCacheEvent.Cleared.class);
  }
}
