package io.kvrouter.core.selection;

import io.kvrouter.core.policy.ScoredCandidates;
import io.kvrouter.core.policy.Scoring;

/**
 * Per-call scratch of one selection: the eligible ranks with their projected loads, overlaps and costs. Each caller
 * owns its own instance (a thread-local one inline, a field in the actor), so nothing here is shared. Costs are
 * written by {@link io.kvrouter.core.policy.Scorers}.
 */
public final class Candidates implements ScoredCandidates {
  private int size;
  private int[] rankIndex = new int[0];
  private int[] inFlight = new int[0];
  private long[] prefillTokens = new long[0];
  private long[] decodeBlocks = new long[0];
  private int[] deviceOverlap = new int[0];
  private int[] hostOverlap = new int[0];
  private int[] diskOverlap = new int[0];
  private int[] activeMatched = new int[0];
  private double[] recentBookings = new double[0];
  private double[] cost = new double[0];
  private double[] weights = new double[0];
  private double temperature;
  private int chosen = -1;
  // what the scorer reads of the request, refilled by each selection (Scoring: one per Select would escape)
  private final Scoring scoring = new Scoring();
  /** Ranks the projection left out, with why: written only on the (rare) paths that skip a rank. */
  private int filteredCount;
  private int[] filteredRank = new int[0];
  private byte[] filteredReason = new byte[0];
  private final boolean picksInOrder;

  private static final ThreadLocal<Candidates> PER_THREAD = ThreadLocal.withInitial(Candidates::new);

  private static final ThreadLocal<Candidates> DECODE_PER_THREAD = ThreadLocal.withInitial(Candidates::new);

  /** Scratch for a caller on many threads at once (an inline Select's thread-local one). */
  public Candidates() {
    this(false);
  }

  private Candidates(boolean picksInOrder) {
    this.picksInOrder = picksInOrder;
  }

  /**
   * Scratch for one caller that picks one selection at a time from whichever thread runs it (the admission actor):
   * its picks take the picker's pick numbers in order ({@link ScoredCandidates#picksInOrder}).
   */
  public static Candidates inOrder() {
    return new Candidates(true);
  }

  @Override
  public boolean picksInOrder() {
    return picksInOrder;
  }

  /** The scratch {@link Scoring} of this selection, filled by {@link Selector}. */
  Scoring scoring() {
    return scoring;
  }

  /** The calling thread's scratch; an inline Select uses it so the hot path allocates no buffers. */
  public static Candidates forCurrentThread() {
    return PER_THREAD.get();
  }

  /** The calling thread's second scratch, for the decode half of a disaggregated inline Select. */
  public static Candidates decodeForCurrentThread() {
    return DECODE_PER_THREAD.get();
  }

  void reset(int capacity) {
    if (rankIndex.length < capacity) {
      rankIndex = new int[capacity];
      inFlight = new int[capacity];
      prefillTokens = new long[capacity];
      decodeBlocks = new long[capacity];
      deviceOverlap = new int[capacity];
      hostOverlap = new int[capacity];
      diskOverlap = new int[capacity];
      activeMatched = new int[capacity];
      recentBookings = new double[capacity];
      cost = new double[capacity];
      weights = new double[capacity];
      filteredRank = new int[capacity];
      filteredReason = new byte[capacity];
    }
    size = 0;
    temperature = 0;
    chosen = -1;
    filteredCount = 0;
  }

  void add(int rank, int requests, long prefill, long decode) {
    add(rank, requests, prefill, decode, 0);
  }

  void add(int rank, int requests, long prefill, long decode, double recent) {
    int i = size++;
    recentBookings[i] = recent;
    rankIndex[i] = rank;
    inFlight[i] = requests;
    prefillTokens[i] = prefill;
    decodeBlocks[i] = decode;
    deviceOverlap[i] = 0;
    hostOverlap[i] = 0;
    diskOverlap[i] = 0;
    activeMatched[i] = 0;
    cost[i] = 0;
  }

  void filter(int rank, FilterReason reason) {
    int i = filteredCount++;
    filteredRank[i] = rank;
    filteredReason[i] = (byte) reason.ordinal();
  }

  /**
   * Keeps only the candidates whose view rank index {@code keep} accepts, in order, recording the others as left out
   * for {@code reason}. Called after projection, before overlaps and costs are filled.
   */
  void retain(java.util.function.IntPredicate keep, FilterReason reason) {
    int kept = 0;
    for (int i = 0; i < size; i++) {
      int rank = rankIndex[i];
      if (!keep.test(rank)) {
        filter(rank, reason);
        continue;
      }
      rankIndex[kept] = rank;
      inFlight[kept] = inFlight[i];
      prefillTokens[kept] = prefillTokens[i];
      decodeBlocks[kept] = decodeBlocks[i];
      recentBookings[kept] = recentBookings[i];
      kept++;
    }
    size = kept;
  }

  /** Ranks the projection left out of this selection. */
  public int filteredCount() {
    return filteredCount;
  }

  /** View index of the i-th rank left out. */
  public int filteredRank(int i) {
    return filteredRank[i];
  }

  public FilterReason filteredReason(int i) {
    return FilterReason.of(filteredReason[i]);
  }

  void choose(int candidate) {
    chosen = candidate;
  }

  /** The candidate the picker chose in the last selection, or -1 if it ended before a pick. */
  public int chosen() {
    return chosen;
  }

  @Override
  public int size() {
    return size;
  }

  /** Index of candidate i's rank in its {@link SelectionView}. */
  public int rankIndex(int i) {
    return rankIndex[i];
  }

  @Override
  public int inFlight(int i) {
    return inFlight[i];
  }

  @Override
  public double recentBookings(int i) {
    return recentBookings[i];
  }

  @Override
  public long prefillTokens(int i) {
    return prefillTokens[i];
  }

  @Override
  public long decodeBlocks(int i) {
    return decodeBlocks[i];
  }

  @Override
  public double cost(int i) {
    return cost[i];
  }

  @Override
  public void setCost(int i, double value) {
    cost[i] = value;
  }

  @Override
  public int deviceOverlap(int i) {
    return deviceOverlap[i];
  }

  @Override
  public int hostOverlap(int i) {
    return hostOverlap[i];
  }

  @Override
  public int diskOverlap(int i) {
    return diskOverlap[i];
  }

  /**
   * Records candidate i's cached prefix: device blocks, then host and disk blocks beyond the device prefix. Called by
   * a {@link KvOverlapSource}.
   */
  public void setOverlap(int i, int device, int hostBeyondDevice, int diskBeyondDevice) {
    deviceOverlap[i] = device;
    hostOverlap[i] = hostBeyondDevice;
    diskOverlap[i] = diskBeyondDevice;
  }

  @Override
  public int activeMatched(int i) {
    return activeMatched[i];
  }

  /** Records how many leading blocks of the request candidate i's active requests already hold. */
  public void setActiveMatched(int i, int blocks) {
    activeMatched[i] = blocks;
  }

  @Override
  public double temperature() {
    return temperature;
  }

  void setTemperature(double value) {
    temperature = value;
  }

  @Override
  public double[] scratchWeights() {
    return weights;
  }
}
