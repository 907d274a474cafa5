package io.kvrouter.sim.driver;

import io.kvrouter.sim.engine.EngineRank;
import io.kvrouter.sim.engine.KvBlockCache;
import io.kvrouter.sim.engine.SimEngine;
import io.kvrouter.sim.engine.TimingModel;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The simulated fleet: how many engines, ranks per engine, and each rank's cache, scheduler and timing. */
public record FleetConfig(int engines, int ranksPerEngine, int kvBlocksPerRank, int blockSize,
    EngineRank.Limits limits, TimingModel timing) {

  /** 28,800 blocks of 16 tokens = 460,800 tokens (900 blocks of 512): an 8B model's KV on one 80 GB GPU. */
  public static final int DEFAULT_KV_BLOCKS = 28_800;
  public static final int DEFAULT_BLOCK_SIZE = 16;

  public FleetConfig {
    if (engines <= 0 || ranksPerEngine <= 0 || kvBlocksPerRank <= 0 || blockSize <= 0) {
      throw new IllegalArgumentException("invalid fleet " + engines + "x" + ranksPerEngine + ", " + kvBlocksPerRank
          + " blocks of " + blockSize);
    }
  }

  /** vLLM-like defaults: 8,192 batched tokens per step, 256 running sequences, 1 % of blocks as watermark. */
  public static FleetConfig of(int engines, int ranksPerEngine, int kvBlocksPerRank, int blockSize) {
    return new FleetConfig(engines, ranksPerEngine, kvBlocksPerRank, blockSize,
        new EngineRank.Limits(8_192, 256, Math.max(1, kvBlocksPerRank / 100)), TimingModel.llama8bOnH100());
  }

  public List<SimEngine> build() {
    List<SimEngine> fleet = new ArrayList<>();
    for (int e = 0; e < engines; e++) {
      List<EngineRank> ranks = new ArrayList<>();
      for (int r = 0; r < ranksPerEngine; r++) {
        ranks.add(new EngineRank(new KvBlockCache(kvBlocksPerRank, 0xE6E1L * (e + 1) + r), timing, limits));
      }
      fleet.add(new SimEngine(workerId(e), List.copyOf(ranks)));
    }
    return fleet;
  }

  public static String workerId(int engine) {
    return "engine-" + engine;
  }

  public String describe() {
    return String.format(Locale.ROOT, "%d engine(s) x %d rank(s), %,d KV blocks of %d tokens per rank (%,d tokens), "
            + "%,d batched tokens per step, at most %d running", engines, ranksPerEngine, kvBlocksPerRank, blockSize,
        (long) kvBlocksPerRank * blockSize, limits.maxBatchedTokens(), limits.maxRunning());
  }
}
