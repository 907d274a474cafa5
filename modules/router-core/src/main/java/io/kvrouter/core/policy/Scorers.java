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

  /**
   * kv: Dynamo's KV cost ({@link #kv}). Its terms: {@code prefill}, {@code decode} and {@code active} always; with
   * their weights above 0, {@code credit_decay} (what the overlap-credit decay adds back to the prefill term),
   * {@code shared_credit} (what the shared-cache credit takes off it), {@code load_bound} (the credit a rank over the
   * load bound loses) and {@code active_requests}. They add up to the cost.
   */
  public static final Scorer KV = new Scorer() {
    @Override
    public boolean readsOverlaps() {
      return true;
    }

    @Override
    public void score(Scoring s, ScoredCandidates c) {
      kv(c, s);
    }

    @Override
    public Map<String, Double> terms(Scoring s, ScoredCandidates c, int i) {
      return kvTerms(c, i, s);
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
   * The kv cost per candidate rank, in blocks: Dynamo's, {@code scale·max((backlogWeight·prefill_tokens +
   * isl)/block_size − credit, 0) + decode_blocks + max(requestBlocks − active_matched, 0) +
   * requestWeight·in_flight}, where {@code credit = overlapCredit·decay·device + hostWeight·host + diskWeight·disk +
   * sharedMultiplier·shared} with
   * <ul>
   *   <li>{@code decay = 1 / (1 + overlapCreditDecay·((prefill_tokens − min_prefill_tokens)/block_size) /
   *       requestBlocks)}: the device credit shrinks with the rank's prefill backlog above the least-loaded
   *       candidate's, counted in requests of this one's size (1 when the decay is 0);</li>
   *   <li>{@code shared = max(cachedDepth − device, 0)}: the request's blocks the fleet holds beyond this rank's
   *       device prefix ({@link ScoredCandidates#cachedDepth}).</li>
   * </ul>
   * kvrouter's own terms: the backlog weight (Dynamo's is 1), and, with a load bound factor {@code f} above 0, no
   * credit for a rank over the bound, {@code ceil(f·(total load + 1)/candidates)} (a rank's load: its in-flight
   * requests, and with {@code load_bound_window} on its recent bookings), when what it would reuse is
   * shared state ({@link #overBound}): consistent hashing with bounded loads for what can be reused elsewhere or is
   * already hot, never for state only that rank holds.
   */
  public static void kv(ScoredCandidates c, Scoring s) {
    double perToken = decayPerToken(s);
    long minPrefill = perToken > 0 ? c.minPrefillTokens() : 0;
    int cachedDepth = s.sharedCacheMultiplier() > 0 ? c.cachedDepth() : 0;
    long bound = loadBound(c, s);
    int deepest = bound == Long.MAX_VALUE ? 0 : c.deepestDeviceOverlap();
    int deepestCount = bound == Long.MAX_VALUE ? 0 : c.deepestDeviceOverlapCount();
    for (int i = 0; i < c.size(); i++) {
      double prefill = overBound(c, i, bound, deepest, deepestCount) ? kvUncreditedPrefillTerm(c, i, s)
          : kvPrefillTerm(c, i, s, creditDecay(c, i, minPrefill, perToken), sharedBeyondDevice(c, i, cachedDepth));
      c.setCost(i, prefill + c.decodeBlocks(i) + kvActiveTerm(c, i, s.requestBlocks())
          + s.decodeActiveRequestWeight() * c.inFlight(i));
    }
  }

  /**
   * The most load ({@link ScoredCandidates#boundLoad}: in-flight requests and recent bookings, this request included)
   * a rank may have and keep its cache credit: {@code ceil(f·(total + 1)/n)}; {@link Long#MAX_VALUE} when the bound
   * is off.
   */
  public static long loadBound(ScoredCandidates c, Scoring s) {
    if (!(s.loadBoundFactor() > 0) || c.size() == 0) {
      return Long.MAX_VALUE;
    }
    return (long) Math.ceil(s.loadBoundFactor() * (c.totalBoundLoad() + 1) / c.size());
  }

  /** The kv cost's terms of candidate i ({@link #KV}); they add up to its cost. */
  public static Map<String, Double> kvTerms(ScoredCandidates c, int i, Scoring s) {
    Map<String, Double> terms = new LinkedHashMap<>();
    double decay = s.overlapCreditDecay() > 0 ? creditDecay(c, i, s, c.minPrefillTokens()) : 1;
    int shared = s.sharedCacheMultiplier() > 0 ? sharedBeyondDevice(c, i, c.cachedDepth()) : 0;
    // each new credit's effect is measured on the clamped prefill term, so the terms add up exactly
    double plain = kvPrefillTerm(c, i, s, 1, 0);
    double decayed = kvPrefillTerm(c, i, s, decay, 0);
    double full = kvPrefillTerm(c, i, s, decay, shared);
    double bounded = overBound(c, i, loadBound(c, s), c.deepestDeviceOverlap(), c.deepestDeviceOverlapCount())
        ? kvUncreditedPrefillTerm(c, i, s) : full;
    terms.put("prefill", plain);
    if (s.overlapCreditDecay() > 0) {
      terms.put("credit_decay", decayed - plain);
    }
    if (s.sharedCacheMultiplier() > 0) {
      terms.put("shared_credit", full - decayed);
    }
    if (s.loadBoundFactor() > 0) {
      terms.put("load_bound", bounded - full);
    }
    terms.put("decode", (double) c.decodeBlocks(i));
    terms.put("active", (double) kvActiveTerm(c, i, s.requestBlocks()));
    if (s.decodeActiveRequestWeight() > 0) {
      terms.put("active_requests", s.decodeActiveRequestWeight() * c.inFlight(i));
    }
    return terms;
  }

  /**
   * The kv cost's prefill term of candidate i: {@code scale·max((prefill_tokens + isl)/block_size − credit, 0)}, the
   * device credit multiplied by {@code decay} and {@code sharedBlocks} credited at the shared-cache multiplier.
   */
  public static double kvPrefillTerm(ScoredCandidates c, int i, Scoring s, double decay, int sharedBlocks) {
    double creditBlocks = s.overlapCredit() * decay * c.deviceOverlap(i) + s.hostCacheHitWeight() * c.hostOverlap(i)
        + s.diskCacheHitWeight() * c.diskOverlap(i) + s.sharedCacheMultiplier() * sharedBlocks;
    double prefill = (s.prefillBacklogWeight() * c.prefillTokens(i) + s.islTokens()) / (double) s.blockSize()
        - creditBlocks;
    return s.prefillLoadScale() * (prefill > 0 ? prefill : 0);
  }

  /**
   * Whether candidate i loses its cache credit to the load bound: its bound load plus this request exceeds
   * {@code bound} and what it would reuse is shared state, not the rank's own: its live bookings already hold every
   * device block the request would reuse there (one more sharer of a prefix the rank is serving), or another
   * candidate holds as deep a device prefix (the request can reuse as much elsewhere). A continuation of state only
   * this rank holds, that no live request on it shares, keeps its credit whatever the load.
   *
   * @param deepest the deepest device overlap of any candidate
   * @param deepestCount how many candidates have it
   */
  static boolean overBound(ScoredCandidates c, int i, long bound, int deepest, int deepestCount) {
    int device = c.deviceOverlap(i);
    return c.boundLoad(i) + 1 > bound && device > 0
        && (c.activeMatched(i) >= device || device < deepest || deepestCount > 1);
  }

  /** The kv cost's prefill term of candidate i without any cache credit (a rank over the load bound). */
  public static double kvUncreditedPrefillTerm(ScoredCandidates c, int i, Scoring s) {
    return s.prefillLoadScale() * (s.prefillBacklogWeight() * c.prefillTokens(i) + s.islTokens())
        / (double) s.blockSize();
  }

  /**
   * The overlap-credit decay of candidate i: {@code 1 / (1 + overlapCreditDecay·excess/requestBlocks)}, excess being
   * its prefill tokens above {@code minPrefillTokens} in blocks; 1 when the decay is off.
   */
  public static double creditDecay(ScoredCandidates c, int i, Scoring s, long minPrefillTokens) {
    return creditDecay(c, i, minPrefillTokens, decayPerToken(s));
  }

  /** The decay's weight per token of excess backlog: {@code overlapCreditDecay / (block_size·requestBlocks)}. */
  static double decayPerToken(Scoring s) {
    return s.overlapCreditDecay() > 0
        ? s.overlapCreditDecay() / ((double) s.blockSize() * Math.max(s.requestBlocks(), 1)) : 0;
  }

  private static double creditDecay(ScoredCandidates c, int i, long minPrefillTokens, double perToken) {
    if (!(perToken > 0)) {
      return 1;
    }
    long excess = c.prefillTokens(i) - minPrefillTokens;
    return excess > 0 ? 1 / (1 + perToken * excess) : 1;
  }

  /** Blocks of the request's fleet-wide cached depth beyond candidate i's device prefix. */
  public static int sharedBeyondDevice(ScoredCandidates c, int i, int cachedDepth) {
    int beyond = cachedDepth - c.deviceOverlap(i);
    return beyond > 0 ? beyond : 0;
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
