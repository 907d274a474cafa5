package io.kvrouter.core.policy;

/**
 * What a scorer reads of the request and the model beside the candidates: the request's prompt and the policy's
 * parameters, with the request's overrides already applied.
 *
 * <p>A selection fills one per thread in place ({@link #set}) rather than allocating one per Select: passed to a
 * scorer the call site cannot inline (the kv cost's), a fresh one escapes and costs ~100 bytes a Select. So a scorer
 * reads it during {@link Scorer#score} or {@link Scorer#terms} only, and keeps no reference to it.
 */
public final class Scoring {
  private int islTokens;
  private int blockSize;
  private int requestBlocks;
  private double overlapCredit;
  private double prefillLoadScale;
  private double hostCacheHitWeight;
  private double diskCacheHitWeight;
  private double overlapCreditDecay;
  private double decodeActiveRequestWeight;
  private double sharedCacheMultiplier;
  private double loadBoundFactor;
  private double prefillBacklogWeight;

  /** Unset: for a selection's scratch, filled by {@link #set} before each use. */
  public Scoring() {}

  /** As {@link #set}. */
  public Scoring(int islTokens, int blockSize, int requestBlocks, double overlapCredit, double prefillLoadScale,
      double hostCacheHitWeight, double diskCacheHitWeight, double overlapCreditDecay,
      double decodeActiveRequestWeight, double sharedCacheMultiplier, double loadBoundFactor,
      double prefillBacklogWeight) {
    set(islTokens, blockSize, requestBlocks, overlapCredit, prefillLoadScale, hostCacheHitWeight, diskCacheHitWeight,
        overlapCreditDecay, decodeActiveRequestWeight, sharedCacheMultiplier, loadBoundFactor, prefillBacklogWeight);
  }

  /**
   * Sets every value and returns this.
   *
   * @param requestBlocks blocks the request occupies, ceil(isl / block size)
   * @param overlapCreditDecay how fast the device credit falls with a rank's prefill backlog above the least-loaded
   *     candidate's (0: off)
   * @param decodeActiveRequestWeight blocks of cost per active request on the rank (0: off)
   * @param sharedCacheMultiplier credit per shared-cache block beyond the rank's device prefix (0: off)
   * @param loadBoundFactor a rank whose load (in-flight requests, and recent bookings with {@code load_bound_window}
   *     on) would exceed this factor times the candidates' mean gets no shared cache credit (0: off)
   * @param prefillBacklogWeight how much a rank's queued prefill tokens count against the request's own (1: as much)
   */
  public Scoring set(int islTokens, int blockSize, int requestBlocks, double overlapCredit, double prefillLoadScale,
      double hostCacheHitWeight, double diskCacheHitWeight, double overlapCreditDecay,
      double decodeActiveRequestWeight, double sharedCacheMultiplier, double loadBoundFactor,
      double prefillBacklogWeight) {
    this.islTokens = islTokens;
    this.blockSize = blockSize;
    this.requestBlocks = requestBlocks;
    this.overlapCredit = overlapCredit;
    this.prefillLoadScale = prefillLoadScale;
    this.hostCacheHitWeight = hostCacheHitWeight;
    this.diskCacheHitWeight = diskCacheHitWeight;
    this.overlapCreditDecay = overlapCreditDecay;
    this.decodeActiveRequestWeight = decodeActiveRequestWeight;
    this.sharedCacheMultiplier = sharedCacheMultiplier;
    this.loadBoundFactor = loadBoundFactor;
    this.prefillBacklogWeight = prefillBacklogWeight;
    return this;
  }

  public int islTokens() {
    return islTokens;
  }

  public int blockSize() {
    return blockSize;
  }

  /** Blocks the request occupies, ceil(isl / block size). */
  public int requestBlocks() {
    return requestBlocks;
  }

  public double overlapCredit() {
    return overlapCredit;
  }

  public double prefillLoadScale() {
    return prefillLoadScale;
  }

  public double hostCacheHitWeight() {
    return hostCacheHitWeight;
  }

  public double diskCacheHitWeight() {
    return diskCacheHitWeight;
  }

  public double overlapCreditDecay() {
    return overlapCreditDecay;
  }

  public double decodeActiveRequestWeight() {
    return decodeActiveRequestWeight;
  }

  public double sharedCacheMultiplier() {
    return sharedCacheMultiplier;
  }

  public double loadBoundFactor() {
    return loadBoundFactor;
  }

  public double prefillBacklogWeight() {
    return prefillBacklogWeight;
  }
}
