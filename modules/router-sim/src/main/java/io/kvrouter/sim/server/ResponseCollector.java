package io.kvrouter.sim.server;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The outputs of one HTTP request's choices (prompts × n), from the engine threads to the response stream. Like
 * vLLM's RequestOutputCollector, it never blocks the engine: tokens produced while the client is not reading are
 * merged into the next delta, so a slow client gets bigger chunks and the engine runs on (memory bounded by the
 * requested output lengths).
 */
public final class ResponseCollector {
  /** New tokens of one choice since its previous delta, and its finish reason once it has finished. */
  public record ChoiceDelta(int index, int[] tokenIds, String finishReason) {}

  private final int choices;
  private final int[][] pending;
  private final int[] pendingCount;
  private final String[] finishReason;
  private final boolean[] finishSent;
  private final int[] promptTokens;
  private final int[] cachedTokens;
  private final int[] completionTokens;
  private final CompletableFuture<Void> done = new CompletableFuture<>();
  private CompletableFuture<List<ChoiceDelta>> waiter;
  private int finished;

  public ResponseCollector(int choices, int[] promptLengths) {
    this.choices = choices;
    this.pending = new int[choices][];
    this.pendingCount = new int[choices];
    this.finishReason = new String[choices];
    this.finishSent = new boolean[choices];
    this.promptTokens = promptLengths.clone();
    this.cachedTokens = new int[choices];
    this.completionTokens = new int[choices];
    for (int i = 0; i < choices; i++) {
      pending[i] = new int[16];
    }
  }

  public int choices() {
    return choices;
  }

  /** The choice's prompt was prefilled, {@code cached} of its tokens served from the prefix cache. */
  public synchronized void prefilled(int choice, int cached) {
    cachedTokens[choice] = cached;
  }

  /** New output tokens of a choice, and its finish reason when they are its last. */
  public void append(int choice, int[] tokens, String finish) {
    CompletableFuture<List<ChoiceDelta>> wake = null;
    boolean allDone = false;
    synchronized (this) {
      if (finishReason[choice] != null) {
        return;
      }
      int needed = pendingCount[choice] + tokens.length;
      if (needed > pending[choice].length) {
        pending[choice] = Arrays.copyOf(pending[choice], Math.max(needed, 2 * pending[choice].length));
      }
      System.arraycopy(tokens, 0, pending[choice], pendingCount[choice], tokens.length);
      pendingCount[choice] = needed;
      completionTokens[choice] += tokens.length;
      if (finish != null) {
        finishReason[choice] = finish;
        allDone = ++finished == choices;
      }
      if (waiter != null) {
        wake = waiter;
        waiter = null;
      }
    }
    if (wake != null) {
      wake.complete(drain());
    }
    if (allDone) {
      done.complete(null);
    }
  }

  /** Completes when every choice has finished. */
  public CompletionStage<Void> done() {
    return done;
  }

  public synchronized boolean finished() {
    return finished == choices;
  }

  /**
   * The next deltas, as soon as there are any; an empty list once every choice has finished and its last delta was
   * taken.
   */
  public CompletionStage<List<ChoiceDelta>> next() {
    synchronized (this) {
      if (!hasDelta() && finished < choices) {
        waiter = new CompletableFuture<>();
        return waiter;
      }
    }
    return CompletableFuture.completedFuture(drain());
  }

  private boolean hasDelta() {
    for (int i = 0; i < choices; i++) {
      if (pendingCount[i] > 0 || (finishReason[i] != null && !finishSent[i])) {
        return true;
      }
    }
    return false;
  }

  private synchronized List<ChoiceDelta> drain() {
    List<ChoiceDelta> deltas = new ArrayList<>();
    for (int i = 0; i < choices; i++) {
      boolean finishNow = finishReason[i] != null && !finishSent[i];
      if (pendingCount[i] > 0 || finishNow) {
        deltas.add(new ChoiceDelta(i, Arrays.copyOf(pending[i], pendingCount[i]), finishNow ? finishReason[i] : null));
        pendingCount[i] = 0;
        finishSent[i] |= finishNow;
      }
    }
    return deltas;
  }

  /** Every token of every choice so far (for a non-streaming answer, once done). */
  public synchronized String finishReason(int choice) {
    return finishReason[choice];
  }

  public synchronized int promptTokens(int choice) {
    return promptTokens[choice];
  }

  public synchronized long totalPromptTokens(int samplesPerPrompt) {
    long total = 0;
    for (int i = 0; i < choices; i += samplesPerPrompt) {
      total += promptTokens[i];
    }
    return total;
  }

  public synchronized long totalCachedTokens(int samplesPerPrompt) {
    long total = 0;
    for (int i = 0; i < choices; i += samplesPerPrompt) {
      total += cachedTokens[i];
    }
    return total;
  }

  public synchronized long totalCompletionTokens() {
    long total = 0;
    for (int count : completionTokens) {
      total += count;
    }
    return total;
  }
}
