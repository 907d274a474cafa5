package io.kvrouter.core.selection;

/**
 * Per-call scratch of one selection: the eligible ranks with their projected loads, overlaps and costs. Each caller
 * owns its own instance (a thread-local one inline, a field in the actor), so nothing here is shared.
 */
public final class Candidates {
  private int size;
  private int[] rankIndex = new int[0];
  private int[] inFlight = new int[0];
  private long[] prefillTokens = new long[0];
  private long[] decodeBlocks = new long[0];
  private int[] deviceOverlap = new int[0];
  private int[] hostOverlap = new int[0];
  private int[] diskOverlap = new int[0];
  private int[] activeMatched = new int[0];
  private double[] cost = new double[0];
  private double[] weights = new double[0];
  private double temperature;

  private static final ThreadLocal<Candidates> PER_THREAD = ThreadLocal.withInitial(Candidates::new);

  /** The calling thread's scratch; an inline Select uses it so the hot path allocates no buffers. */
  public static Candidates forCurrentThread() {
    return PER_THREAD.get();
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
      cost = new double[capacity];
      weights = new double[capacity];
    }
    size = 0;
    temperature = 0;
  }

  void add(int rank, int requests, long prefill, long decode) {
    int i = size++;
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

  public int size() {
    return size;
  }

  /** Index of candidate i's rank in its {@link SelectionView}. */
  public int rankIndex(int i) {
    return rankIndex[i];
  }

  public int inFlight(int i) {
    return inFlight[i];
  }

  public long prefillTokens(int i) {
    return prefillTokens[i];
  }

  public long decodeBlocks(int i) {
    return decodeBlocks[i];
  }

  public double cost(int i) {
    return cost[i];
  }

  void setCost(int i, double value) {
    cost[i] = value;
  }

  /** least_in_flight and power_of_two: a candidate's cost is its in-flight requests. */
  void setInFlightCosts() {
    int[] requests = inFlight;
    double[] costs = cost;
    for (int i = 0; i < size; i++) {
      costs[i] = requests[i];
    }
  }

  /**
   * Dynamo's kv cost for every candidate (see {@link Selector#computeCosts}); one pass over the arrays, with the
   * request's terms computed once by the caller.
   */
  void setKvCosts(int islTokens, double blockSize, int requestBlocks, double credit, double hostWeight,
      double diskWeight, double scale) {
    int[] device = deviceOverlap;
    int[] host = hostOverlap;
    int[] disk = diskOverlap;
    int[] active = activeMatched;
    long[] prefillTokens = this.prefillTokens;
    long[] decodeBlocks = this.decodeBlocks;
    double[] costs = cost;
    for (int i = 0; i < size; i++) {
      double creditBlocks = credit * device[i] + hostWeight * host[i] + diskWeight * disk[i];
      double prefill = (prefillTokens[i] + islTokens) / blockSize - creditBlocks;
      int additionalActive = requestBlocks - active[i];
      costs[i] = scale * (prefill > 0 ? prefill : 0) + decodeBlocks[i] + (additionalActive > 0 ? additionalActive : 0);
    }
  }

  public int deviceOverlap(int i) {
    return deviceOverlap[i];
  }

  public int hostOverlap(int i) {
    return hostOverlap[i];
  }

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

  public int activeMatched(int i) {
    return activeMatched[i];
  }

  /** Records how many leading blocks of the request candidate i's active requests already hold. */
  public void setActiveMatched(int i, int blocks) {
    activeMatched[i] = blocks;
  }

  public double temperature() {
    return temperature;
  }

  void setTemperature(double value) {
    temperature = value;
  }

  /** Scratch for a softmax picker's weights; valid for indexes below {@link #size()}. */
  public double[] scratchWeights() {
    return weights;
  }
}
