package io.kvrouter.sim.workload;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Replays Mooncake-format entries open loop: entry i arrives at {@code timestamp × timeScale} (so 0.5 doubles the
 * rate). Each hash id becomes 512 synthetic tokens drawn from the id alone, so equal ids give equal tokens and the
 * router's block hashes of shared prefixes match; a partial last block takes the first tokens of its id's block.
 * Output tokens are drawn per entry.
 */
public final class TraceWorkload implements Workload {
  private final List<MooncakeTrace.Entry> entries;
  private final String source;
  private final double timeScale;
  private final long seed;
  private final Map<Long, int[]> blockTokens = new HashMap<>();

  public TraceWorkload(List<MooncakeTrace.Entry> entries, String source, double timeScale, long seed) {
    if (!(timeScale > 0)) {
      throw new IllegalArgumentException("time scale must be positive, got " + timeScale);
    }
    this.entries = entries;
    this.source = source;
    this.timeScale = timeScale;
    this.seed = seed;
  }

  @Override
  public String description() {
    long first = entries.isEmpty() ? 0 : entries.get(0).timestampMillis();
    long last = entries.isEmpty() ? 0 : entries.get(entries.size() - 1).timestampMillis();
    return String.format(Locale.ROOT, "mooncake trace %s: %d requests over %.1f s, time scale %.3g, seed %d",
        source, entries.size(), (last - first) * timeScale / 1000.0, timeScale, seed);
  }

  @Override
  public void start(Arrivals arrivals) {
    long origin = entries.stream().mapToLong(MooncakeTrace.Entry::timestampMillis).min().orElse(0);
    for (int i = 0; i < entries.size(); i++) {
      MooncakeTrace.Entry e = entries.get(i);
      arrivals.at(Math.round((e.timestampMillis() - origin) * timeScale * 1000), request(i, e));
    }
  }

  private WorkloadRequest request(int index, MooncakeTrace.Entry e) {
    int output = Math.max(1, e.outputLength());
    int[] tokens = new int[e.inputLength() + output];
    int filled = 0;
    for (long id : e.hashIds()) {
      int[] block = blockTokens.computeIfAbsent(id,
          k -> Tokens.generate(Tokens.key(0xB10C, k), MooncakeTrace.BLOCK_TOKENS));
      int n = Math.min(block.length, e.inputLength() - filled);
      System.arraycopy(block, 0, tokens, filled, n);
      filled += n;
    }
    System.arraycopy(Tokens.generate(Tokens.key(seed, index, 2), output), 0, tokens, filled, output);
    String id = "trace-" + index;
    return new WorkloadRequest(id, id, tokens, e.inputLength());
  }
}
