package io.kvrouter.sim.engine;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * One data-parallel rank of a simulated engine: a KV block cache and a continuous-batching scheduler in the style of
 * vLLM with chunked prefill. Each step takes one token from every decoding sequence, then prefill chunks of running
 * requests, then admits waiting requests first come first served, while the step's batched-token budget lasts, the
 * running set is below its bound and the cache can reserve the request's whole sequence (prompt and output) with a
 * watermark of blocks to spare; the first waiting request that does not fit stops admission (no overtaking).
 * Reserving the whole sequence at admission means a running request is never preempted.
 *
 * <p>A step is two calls: {@link #beginStep()} plans it at its start time (admission, hence evictions, happen here)
 * and returns its duration from the {@link TimingModel}; {@link #endStep()} applies it at its end time (KV of the
 * computed tokens is stored, first tokens and completions are reported). {@link #abort} removes a request between
 * steps (the engine-server's client disconnect), keeping the blocks it computed cached, as vLLM does.
 */
public final class EngineRank {
  /** Scheduler bounds of one rank. */
  public record Limits(int maxBatchedTokens, int maxRunning, int watermarkBlocks) {
    public Limits {
      if (maxBatchedTokens <= 0 || maxRunning <= 0 || watermarkBlocks < 0) {
        throw new IllegalArgumentException("invalid scheduler limits " + this);
      }
    }
  }

  /** A request on this rank and how far it has got. */
  public static final class Active {
    private final SimRequest request;
    private KvBlockCache.Holding holding;
    private int computed;
    private int generated;
    private int scheduled;
    /** Prompt tokens whose KV a prefill engine computed and this rank received (vLLM's do_remote_prefill). */
    private final int transferred;

    Active(SimRequest request, int transferred) {
      this.request = request;
      this.transferred = transferred;
    }

    public SimRequest request() {
      return request;
    }

    /** Output tokens produced so far (the first one comes with the end of prefill). */
    public int generated() {
      return generated;
    }

    /** Prompt tokens served from the cache at admission, or received computed from a prefill engine. */
    public int cachedTokens() {
      return holding == null ? 0 : Math.max(holding.hitBlocks() * request.blockSize(), transferred);
    }

    boolean prefilling() {
      return computed < request.promptTokens();
    }
  }

  /**
   * What one step did, at its end: requests admitted when it was planned, those whose first token came out, every
   * request that produced a token (first or later), and those that finished.
   */
  public record StepOutcome(List<Active> admitted, List<Active> firstTokens, List<Active> produced,
      List<Active> finished) {}

  private final KvBlockCache cache;
  private final TimingModel timing;
  private final Limits limits;
  private final ArrayDeque<Active> waiting = new ArrayDeque<>();
  private final List<Active> running = new ArrayList<>();
  private boolean stepping;
  private List<Active> admittedThisStep = new ArrayList<>();
  private long busyMicros;
  private long servedRequests;

  public EngineRank(KvBlockCache cache, TimingModel timing, Limits limits) {
    this.cache = cache;
    this.timing = timing;
    this.limits = limits;
  }

  public KvBlockCache cache() {
    return cache;
  }

  public void enqueue(SimRequest request) {
    enqueue(request, 0);
  }

  /**
   * Enqueues a request of which {@code transferredTokens} leading prompt tokens arrive computed from a prefill
   * engine (a disaggregated decode): they are not prefilled here (at least the last prompt token is, as a hit), and
   * their blocks are cached once admitted.
   */
  public void enqueue(SimRequest request, int transferredTokens) {
    int needed = request.totalBlocks() + limits.watermarkBlocks();
    if (needed > cache.capacity()) {
      throw new IllegalArgumentException("request " + request.id() + " needs " + needed
          + " blocks with the watermark; the rank has " + cache.capacity());
    }
    waiting.add(new Active(request, Math.max(0, Math.min(transferredTokens, request.promptTokens() - 1))));
  }

  /** True while a step is in progress: a new request then waits for the next step. */
  public boolean stepping() {
    return stepping;
  }

  /** Requests admitted or waiting. */
  public int inFlight() {
    return waiting.size() + running.size();
  }

  public int waitingCount() {
    return waiting.size();
  }

  /** Requests admitted (holding blocks), prefilling or decoding. */
  public int runningCount() {
    return running.size();
  }

  /**
   * Removes a waiting or running request between steps: its reservation is freed and the blocks it computed stay
   * cached (evictable once unreferenced). Returns false when the rank does not hold it.
   */
  public boolean abort(String requestId) {
    if (stepping) {
      throw new IllegalStateException("abort while a step is in progress");
    }
    for (var it = waiting.iterator(); it.hasNext(); ) {
      if (it.next().request.id().equals(requestId)) {
        it.remove();
        return true;
      }
    }
    for (int i = 0; i < running.size(); i++) {
      Active a = running.get(i);
      if (a.request.id().equals(requestId)) {
        cache.release(a.holding);
        running.remove(i);
        return true;
      }
    }
    return false;
  }

  /** Prompt tokens still to be computed, waiting requests included. */
  public long pendingPrefillTokens() {
    long tokens = 0;
    for (Active a : running) {
      tokens += Math.max(0, a.request.promptTokens() - a.computed);
    }
    for (Active a : waiting) {
      tokens += a.request.promptTokens();
    }
    return tokens;
  }

  public long busyMicros() {
    return busyMicros;
  }

  public long servedRequests() {
    return servedRequests;
  }

  /** Plans a step; returns its duration in microseconds, or -1 when there is nothing to run. */
  public long beginStep() {
    if (stepping) {
      throw new IllegalStateException("a step is already in progress");
    }
    int budget = limits.maxBatchedTokens();
    int decodes = 0;
    long decodeContext = 0;
    long prefillTokens = 0;
    double attentionPairs = 0;
    long prefillContext = 0;
    for (Active a : running) {
      a.scheduled = 0;
      if (!a.prefilling() && budget > 0) {
        a.scheduled = 1;
        budget--;
        decodes++;
        decodeContext += a.computed + 1;
      }
    }
    for (Active a : running) {
      if (a.prefilling() && budget > 0) {
        int chunk = schedulePrefill(a, budget);
        budget -= chunk;
        prefillTokens += chunk;
        attentionPairs += chunk * (a.computed + (chunk + 1) / 2.0);
        prefillContext += a.computed;
      }
    }
    while (budget > 0 && running.size() < limits.maxRunning() && !waiting.isEmpty()) {
      Active next = waiting.peek();
      SimRequest r = next.request;
      KvBlockCache.Holding holding = cache.admit(r.blockHashes(), r.hitLimit(), r.totalBlocks(),
          limits.watermarkBlocks());
      if (holding == null) {
        break;
      }
      waiting.poll();
      admittedThisStep.add(next);
      next.holding = holding;
      next.computed = Math.max(holding.hitBlocks() * r.blockSize(), next.transferred);
      running.add(next);
      int chunk = schedulePrefill(next, budget);
      budget -= chunk;
      prefillTokens += chunk;
      attentionPairs += chunk * (next.computed + (chunk + 1) / 2.0);
      prefillContext += next.computed;
    }
    if (prefillTokens == 0 && decodes == 0) {
      return -1;
    }
    stepping = true;
    long micros = timing.stepMicros(prefillTokens, attentionPairs, prefillContext, decodes, decodeContext);
    busyMicros += micros;
    return micros;
  }

  private static int schedulePrefill(Active a, int budget) {
    int chunk = Math.min(a.request.promptTokens() - a.computed, budget);
    a.scheduled = chunk;
    return chunk;
  }

  /** Applies the step planned by {@link #beginStep()}. */
  public StepOutcome endStep() {
    if (!stepping) {
      throw new IllegalStateException("no step in progress");
    }
    stepping = false;
    List<Active> admitted = admittedThisStep;
    admittedThisStep = new ArrayList<>();
    List<Active> firstTokens = new ArrayList<>();
    List<Active> produced = new ArrayList<>();
    List<Active> finished = new ArrayList<>();
    for (Active a : running) {
      if (a.scheduled == 0) {
        continue;
      }
      boolean wasPrefilling = a.prefilling();
      if (wasPrefilling) {
        a.computed += a.scheduled;
        if (!a.prefilling()) {
          a.generated = 1;
          firstTokens.add(a);
          produced.add(a);
        }
      } else {
        a.computed++;
        a.generated++;
        produced.add(a);
      }
      a.scheduled = 0;
      SimRequest r = a.request;
      cache.store(a.holding, r.blockHashes(), r.tokens(), r.blockSize(),
          Math.min(a.computed / r.blockSize(), r.blockHashes().length));
      if (!a.prefilling() && a.generated >= r.outputTokens()) {
        finished.add(a);
      }
    }
    for (Active a : finished) {
      cache.release(a.holding);
      running.remove(a);
      servedRequests++;
    }
    return new StepOutcome(admitted, firstTokens, produced, finished);
  }
}
