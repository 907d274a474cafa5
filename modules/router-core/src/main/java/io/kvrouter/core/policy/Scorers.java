package io.kvrouter.core.policy;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The built-in cost functions over a selection's candidates, kept apart from the pickers that choose by cost (as
 * Dynamo keeps its scorer and selector apart). round_robin and random read no cost.
 */
public final class Scorers {
  /** least_in_flight and power_of_two: a candidate's cost is its in-flight requests. */
  public static final Scorer IN_FLIGHT = new Scorer() {
    @Override
    public void score(Scoring scoring, ScoredCandidates c) {
      inFlight(c);
    }

    @Override
    public Map<String, Double> terms(Scoring scoring, ScoredCandidates c, int i) {
      return Map.of("in_flight", (double) c.inFlight(i));
    }
  };

  /** kv: Dynamo's KV cost ({@link #kv}); its terms are {@code prefill}, {@code decode} and {@code active}. */
  public static final Scorer KV = new Scorer() {
    @Override
    public boolean readsOverlaps() {
      return true;
    }

    @Override
    public void score(Scoring s, ScoredCandidates c) {
      kv(c, s.islTokens(), s.blockSize(), s.requestBlocks(), s.overlapCredit(), s.hostCacheHitWeight(),
          s.diskCacheHitWeight(), s.prefillLoadScale());
    }

    @Override
    public Map<String, Double> terms(Scoring s, ScoredCandidates c, int i) {
      Map<String, Double> terms = new LinkedHashMap<>();
      terms.put("prefill", kvPrefillTerm(c, i, s.islTokens(), s.blockSize(), s.overlapCredit(),
          s.hostCacheHitWeight(), s.diskCacheHitWeight(), s.prefillLoadScale()));
      terms.put("decode", (double) c.decodeBlocks(i));
      terms.put("active", (double) kvActiveTerm(c, i, s.requestBlocks()));
      return terms;
    }
  };

  private Scorers() {}

  /** least_in_flight and power_of_two: a candidate's cost is its in-flight requests. */
  public static void inFlight(ScoredCandidates c) {
    for (int i = 0; i < c.size(); i++) {
      c.setCost(i, c.inFlight(i));
    }
  }

  /**
   * Dynamo's kv cost per candidate rank: {@code scale·max((prefill_tokens + isl)/block_size − (credit·device
   * + hostWeight·host + diskWeight·disk), 0) + decode_blocks + max(requestBlocks − active_matched, 0)}.
   *
   * @param requestBlocks blocks the request occupies, ceil(isl / block size)
   */
  public static void kv(ScoredCandidates c, int islTokens, int blockSize, int requestBlocks, double credit,
      double hostWeight, double diskWeight, double scale) {
    for (int i = 0; i < c.size(); i++) {
      c.setCost(i, kvPrefillTerm(c, i, islTokens, blockSize, credit, hostWeight, diskWeight, scale)
          + c.decodeBlocks(i) + kvActiveTerm(c, i, requestBlocks));
    }
  }

  /** The kv cost's prefill term of candidate i: {@code scale·max((prefill_tokens + isl)/block_size − credit, 0)}. */
  public static double kvPrefillTerm(ScoredCandidates c, int i, int islTokens, int blockSize, double credit,
      double hostWeight, double diskWeight, double scale) {
    double creditBlocks = credit * c.deviceOverlap(i) + hostWeight * c.hostOverlap(i) + diskWeight * c.diskOverlap(i);
    double prefill = (c.prefillTokens(i) + islTokens) / (double) blockSize - creditBlocks;
    return scale * (prefill > 0 ? prefill : 0);
  }

  /** The kv cost's active-blocks term of candidate i: request blocks its live bookings do not hold yet. */
  public static int kvActiveTerm(ScoredCandidates c, int i, int requestBlocks) {
    int additionalActive = requestBlocks - c.activeMatched(i);
    return additionalActive > 0 ? additionalActive : 0;
  }

  /** Blocks a request occupies: ceil(isl / block size). */
  public static int requestBlocks(int islTokens, int blockSize) {
    return blockSize <= 0 ? 0 : (islTokens + blockSize - 1) / blockSize;
  }
}
