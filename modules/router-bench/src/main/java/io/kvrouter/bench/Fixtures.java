package io.kvrouter.bench;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.admission.Clock;
import io.kvrouter.core.hashing.BlockHasher;
import io.kvrouter.core.indexer.KvEvent;
import io.kvrouter.core.indexer.ModelKvIndex;
import io.kvrouter.core.indexer.StorageTier;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.model.WorkerConfig;
import io.kvrouter.core.model.WorkerRole;
import io.kvrouter.core.selection.KvOverlapSource;
import io.kvrouter.core.selection.SelectionRequest;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.atomic.AtomicInteger;

/** Workers, requests, block chains and index contents shared by the benchmarks. */
final class Fixtures {
  static final int BLOCK_SIZE = 16;
  /** The wall clock as the inline path reads it: lazily, only to check a heartbeat. */
  static final java.util.function.LongSupplier CLOCK = System::currentTimeMillis;
  static final String MODEL = "bench/model";
  /** Distinguishes an engine's block id from the router's tokens hash, as a salting engine would. */
  private static final long ENGINE_SALT = 0x9E3779B97F4A7C15L;

  private Fixtures() {}

  static String workerId(int i) {
    return String.format("w%04d", i);
  }

  static WorkerConfig worker(String id) {
    return new WorkerConfig(id, 0, 1, 8192, 100_000, BLOCK_SIZE, "http://" + id + ":8000", "local",
        WorkerRole.AGGREGATED);
  }

  /** Sequence hashes of {@code blocks} blocks of fresh random content. */
  static long[] chain(SplittableRandom rnd, int blocks) {
    long[] local = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      local[i] = rnd.nextLong();
    }
    return BlockHasher.sequenceHashesFromLocal(local, BlockHasher.BASE_SEED);
  }

  /** {@code prefix} followed by {@code more} blocks of fresh content, chained on from the prefix. */
  static long[] extend(long[] prefix, SplittableRandom rnd, int more) {
    long[] out = Arrays.copyOf(prefix, prefix.length + more);
    for (int i = prefix.length; i < out.length; i++) {
      long local = rnd.nextLong();
      out[i] = i == 0 ? local : BlockHasher.nextSequenceHash(out[i - 1], local, BlockHasher.BASE_SEED);
    }
    return out;
  }

  /** The engine's (salted) block id of a tokens hash. */
  static long engineId(long tokensHash) {
    return tokensHash ^ ENGINE_SALT;
  }

  static long[] engineIds(long[] tokensHashes, int from, int to) {
    long[] out = new long[to - from];
    for (int i = from; i < to; i++) {
      out[i - from] = engineId(tokensHashes[i]);
    }
    return out;
  }

  /** A Stored event for blocks [from, to) of {@code seq}, chained under block from-1 (or the root). */
  static KvEvent.Stored stored(long[] seq, int from, int to) {
    Long parent = from == 0 ? null : engineId(seq[from - 1]);
    return new KvEvent.Stored(StorageTier.DEVICE, parent, engineIds(seq, from, to), Arrays.copyOfRange(seq, from, to));
  }

  static SelectionRequest request(long[] blockHashes, String requestId) {
    return new SelectionRequest(MODEL, requestId, blockHashes, Math.max(1, blockHashes.length) * BLOCK_SIZE, 0, null,
        null, null, 0, null, null, null);
  }

  /** An admission state (no actor) with {@code workers} workers under {@code policy}, fed from {@code source}. */
  static AdmissionState state(int workers, String policy, KvOverlapSource source) {
    AdmissionState state = new AdmissionState(MODEL, AdmissionSettings.DEFAULTS, Clock.SYSTEM, source, view -> {}, 0);
    for (int i = 0; i < workers; i++) {
      state.register(worker(workerId(i)));
    }
    state.setPolicy(policy, Map.of("seed", "7"));
    return state;
  }

  /** Feeds a {@link ModelKvIndex} with Stored events, one event-id sequence per rank. */
  static final class IndexFeeder {
    final ModelKvIndex index;
    private final Map<Rank, Long> nextIds = new HashMap<>();

    IndexFeeder(ModelKvIndex index) {
      this.index = index;
    }

    void store(Rank rank, long[] seq, int from, int to) {
      if (to <= from) {
        return;
      }
      long id = nextIds.merge(rank, 1L, Long::sum);
      index.apply(rank, id, stored(seq, from, to));
    }
  }

  /**
   * Builds a populated kv view: {@code workers} workers; worker w holds a prefix of {@code request} whose length
   * spreads over 0..100 % of it, plus {@code background} chains of its own of up to 64 blocks.
   */
  static AdmissionState kvState(int workers, String policy, long[] request, int background, long seed) {
    ModelKvIndex index = new ModelKvIndex(Clock.SYSTEM::millis);
    IndexFeeder feeder = new IndexFeeder(index);
    SplittableRandom rnd = new SplittableRandom(seed);
    AdmissionState state = state(workers, policy, index);
    for (int w = 0; w < workers; w++) {
      Rank rank = worker(workerId(w)).rank(0);
      int held = (int) ((long) request.length * ((w * 37L) % 101) / 100);
      feeder.store(rank, request, 0, held);
      for (int b = 0; b < background; b++) {
        long[] other = chain(rnd, Math.min(64, Math.max(1, request.length)));
        feeder.store(rank, other, 0, other.length);
      }
    }
    return state;
  }

  /**
   * A fixed pool of {@code threads} daemon threads named {@code prefix-N}: a fork-join pool in FIFO mode, so a
   * caller that queues its next turn from a pool thread puts it on that thread's own queue (idle threads steal),
   * where a shared blocking queue would make the callers contend for its lock on every turn.
   */
  static ExecutorService pool(String prefix, int threads) {
    AtomicInteger n = new AtomicInteger();
    ForkJoinPool.ForkJoinWorkerThreadFactory factory = pool -> {
      ForkJoinWorkerThread t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(pool);
      t.setName(prefix + "-" + n.incrementAndGet());
      return t;
    };
    return new ForkJoinPool(threads, factory, null, true);
  }
}
